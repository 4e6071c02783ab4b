package deploy_test

// Checks .ci/install-test-deps's guard against package services starting
// during its apt installs: the guard's own lines are run by bash, with
// apt-get replaced by a stub that asks the policy-rc.d as invoke-rc.d would.

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const ciRun = ".ci/install-test-deps"

// ciGuard is the policy-rc.d part of .ci/install-test-deps, from
// policy_rc_d= to the end of apt_install: the helpers and traps, with the
// policy-rc.d path moved to policy.
func ciGuard(t *testing.T, script, policy string) string {
	t.Helper()
	start := strings.Index(script, "policy_rc_d=/usr/sbin/policy-rc.d\n")
	end := -1
	if i := strings.Index(script, "\napt_install() {\n"); i > start {
		if j := strings.Index(script[i:], "\n}\n"); j >= 0 {
			end = i + j + 3
		}
	}
	if start < 0 || end < start {
		t.Fatalf("%s: want policy_rc_d=/usr/sbin/policy-rc.d, then the helpers, then apt_install() { ... }", ciRun)
	}
	return strings.ReplaceAll(script[start:end], "/usr/sbin/policy-rc.d", policy)
}

func TestCIRunPolicyRCD(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash not found: .ci/install-test-deps needs it (apt-get install bash)")
	}
	data, err := os.ReadFile(filepath.Join(root, ciRun))
	if err != nil {
		t.Fatal(err)
	}
	script := string(data)
	if out, err := exec.Command(bash, "-n", filepath.Join(root, ciRun)).CombinedOutput(); err != nil {
		t.Fatalf("bash -n %s: %v\n%s", ciRun, err, out)
	}
	// Every install goes through apt_install, which forbids service starts.
	// (Commands only: the script also prints apt-get install lines as hints.)
	installs := regexp.MustCompile(`(?m)^[ \t]*(\w+=\S* +)*(sudo +)?apt(-get)? +(-\S+ +)*install\b.*`).FindAllString(script, -1)
	if len(installs) != 1 || !strings.Contains(ciGuard(t, script, "/x"), installs[0]) {
		t.Errorf("%s: apt installs %q; want one, in apt_install, which puts policy-rc.d in place first", ciRun, installs)
	}
	if i, j := strings.LastIndex(script, "apt_install \""), strings.LastIndex(script, "  remove_policy_rc_d\n"); i < 0 || j < i {
		t.Errorf("%s: call remove_policy_rc_d after the apt installs: services may start again then", ciRun)
	}

	for _, c := range []struct {
		name, before, end string
		kept              bool // policy-rc.d there after the run
	}{
		{"ok", "", "true", false},
		{"failing", "", "false", false},
		{"killed", "", "kill -TERM $$; sleep 5", false},
		{"left by a killed run", "ours", "true", false},
		{"the machine's own", "foreign", "true", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			policy, log := filepath.Join(dir, "policy-rc.d"), filepath.Join(dir, "log")
			guard := ciGuard(t, script, policy)
			switch c.before {
			case "ours":
				mark := regexp.MustCompile(`(?m)^policy_mark='([^']*)'$`).FindStringSubmatch(guard)
				if mark == nil {
					t.Fatalf("%s: no policy_mark='...' line", ciRun)
				}
				writeExec(t, policy, "#!/bin/sh\n"+mark[1]+"\nexit 101\n")
			case "foreign":
				writeExec(t, policy, "#!/bin/sh\nexit 101\n")
			}
			// The stub records what policy-rc.d says (101: do not start).
			test := "set -euo pipefail\n" +
				`apt-get() { rc=0; "$POLICY" pagewatch.service start || rc=$?; echo "apt-get $1 $rc" >>"$LOG"; }` + "\n" +
				guard + "\napt_install a b\napt_install c\n" + c.end + "\n"
			cmd := exec.Command(bash, "-c", test)
			cmd.Env = append(os.Environ(), "POLICY="+policy, "LOG="+log)
			out, _ := cmd.CombinedOutput()
			calls, _ := os.ReadFile(log)
			lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
			if len(lines) != 3 || strings.Count(string(calls), " 101\n") != 3 {
				t.Errorf("apt-get calls and policy-rc.d's answers:\n%s\nwant update once, install twice, each answered 101\n%s", calls, out)
			}
			if _, err := os.Stat(policy); (err == nil) != c.kept {
				t.Errorf("policy-rc.d there after the run: %v, want %v\n%s", err == nil, c.kept, out)
			}
		})
	}
}

func writeExec(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o755); err != nil {
		t.Fatal(err)
	}
}
