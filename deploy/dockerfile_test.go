package deploy_test

// Checks deploy/Dockerfile and .dockerignore without a Docker engine (CI
// has none): the Dockerfile's instructions are read, its go build line is
// run as the builder stage would, and every compose service's command is
// then run with --check-config against the config as that service sees it
// (see serviceconfig_test.go); .dockerignore must hide no file the build
// needs.

import (
	"debug/elf"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dockerfile is deploy/Dockerfile's instructions, continuation lines joined.
func dockerfile(t *testing.T) [][2]string {
	data, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	joined := regexp.MustCompile(`\\\n(\s*#.*\n)*`).ReplaceAllString(string(data), " ")
	for _, line := range strings.Split(joined, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		instr, args, _ := strings.Cut(line, " ")
		out = append(out, [2]string{strings.ToUpper(instr), strings.TrimSpace(args)})
	}
	return out
}

var buildRE = regexp.MustCompile(`go build (.*)`)

func TestDockerfile(t *testing.T) {
	var stages, users []string
	var build, expose, entrypoint string
	for _, in := range dockerfile(t) {
		switch in[0] {
		case "FROM":
			stages = append(stages, in[1])
			users = append(users, "")
		case "USER":
			users[len(users)-1] = in[1]
		case "RUN":
			if m := buildRE.FindStringSubmatch(in[1]); m != nil {
				build = in[1]
			}
		case "EXPOSE":
			expose += " " + in[1]
		case "ENTRYPOINT":
			entrypoint = in[1]
		}
	}
	// The builder's Go is go.mod's minor version: the golang images set
	// GOTOOLCHAIN=local, so an older one refuses to build.
	gomod, _ := os.ReadFile(filepath.Join(root, "go.mod"))
	goVer := "(go.mod has no go line)"
	if m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod); m != nil {
		goVer = string(m[1])
	}
	if len(stages) < 2 || !strings.Contains(stages[0], "golang:"+goVer) || !strings.Contains(stages[0], " AS ") {
		t.Errorf("stages %q: want a golang:%s builder stage (go.mod's Go) and a final stage", stages, goVer)
	}
	final := users[len(users)-1]
	if uid, _, _ := strings.Cut(final, ":"); !regexp.MustCompile(`^[1-9][0-9]*$`).MatchString(uid) {
		t.Errorf("final stage USER %q: want a numeric non-root uid (Kubernetes runAsNonRoot checks it)", final)
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", `-ldflags "-s -w"`, "./cmd/ingest", "./cmd/sweeper", "./cmd/worker", "./cmd/console", "--mount=type=cache,target=/go/pkg/mod"} {
		if !strings.Contains(build, want) {
			t.Errorf("go build step %q lacks %s", build, want)
		}
	}
	for _, port := range []string{"9101", "9102", "9103", "9104", "9105", "9106"} {
		if !slices.Contains(strings.Fields(expose), port) {
			t.Errorf("EXPOSE%s lacks %s", expose, port)
		}
	}
	if regexp.MustCompile(`ingest|sweeper|worker|console`).MatchString(entrypoint) {
		t.Errorf("ENTRYPOINT %s fixes one daemon; compose and Kubernetes pick the command", entrypoint)
	}
}

// TestDockerBuild runs the Dockerfile's go build line as the builder stage
// would, checks the binaries are static, then runs every compose service's
// command with --check-config against the config it mounts.
func TestDockerBuild(t *testing.T) {
	var line string
	for _, in := range dockerfile(t) {
		if m := buildRE.FindStringSubmatch(in[1]); in[0] == "RUN" && m != nil {
			line = m[1]
		}
	}
	out := t.TempDir()
	// The Dockerfile's arguments, minus -o (ours is a temp dir); the quoted
	// -ldflags value stays one argument.
	args := []string{"build"}
	for _, m := range regexp.MustCompile(`"[^"]*"|\S+`).FindAllString(line, -1) {
		args = append(args, strings.Trim(m, `"`))
	}
	if i := slices.Index(args, "-o"); i > 0 {
		args = slices.Delete(args, i, i+2)
	}
	args = slices.Insert(args, 1, "-o", out+"/")
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	for _, bin := range []string{"ingest", "sweeper", "worker", "console"} {
		f, err := elf.Open(filepath.Join(out, bin))
		if err != nil {
			t.Fatal(err)
		}
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				t.Errorf("%s is dynamically linked: it would not run on every base image", bin)
			}
		}
		f.Close()
	}
	p := loadProject(t)
	for _, d := range daemons(t, p) {
		v := rewriteConfig(t, p, d)
		if v.file == "" {
			continue
		}
		argv := slices.Clone([]string(d.svc.Command))
		c := exec.Command(filepath.Join(out, argv[0]), append(argv[1:], "--check-config")...)
		c.Env = append(os.Environ(), "PAGEWATCH_CONFIG="+v.file)
		if b, err := c.CombinedOutput(); err != nil {
			t.Errorf("service %s: %s --check-config%s: %v\n%s", d.name, strings.Join(argv, " "), v.without(), err, b)
		}
	}
}

// TestDockerignore: no pattern hides a file the image build needs.
func TestDockerignore(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, l)
		}
	}
	// Each file of the module's packages the daemons import, embedded
	// files included, relative to the repository root.
	cmd := exec.Command("go", "list", "-deps", "-f",
		`{{if .Module}}{{if .Module.Main}}{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}}
{{end}}{{range .EmbedFiles}}{{$d}}/{{.}}
{{end}}{{end}}{{end}}`, "./cmd/ingest", "./cmd/sweeper", "./cmd/worker", "./cmd/console")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	needed := []string{"go.mod", "go.sum"}
	for _, f := range strings.Fields(string(out)) {
		r, _ := filepath.Rel(root, f)
		needed = append(needed, filepath.ToSlash(r))
	}
	for _, f := range needed {
		if ignored(patterns, f) {
			t.Errorf(".dockerignore excludes %s, which the image build needs", f)
		}
	}
	t.Logf("%d files the build needs, none excluded by %d patterns", len(needed), len(patterns))
}

// ignored applies .dockerignore rules: the last matching pattern wins, "!"
// re-includes, "**" spans directories, and a pattern matching a directory
// matches everything under it.
func ignored(patterns []string, file string) bool {
	parts := strings.Split(file, "/")
	out := false
	for _, p := range patterns {
		neg := strings.HasPrefix(p, "!")
		segs := strings.Split(strings.Trim(path.Clean(strings.TrimPrefix(p, "!")), "/"), "/")
		for n := 1; n <= len(parts); n++ {
			if matchSegs(segs, parts[:n]) {
				out = !neg
				break
			}
		}
	}
	return out
}

func matchSegs(pat, name []string) bool {
	if len(pat) == 0 {
		return len(name) == 0
	}
	if pat[0] == "**" {
		for i := 0; i <= len(name); i++ {
			if matchSegs(pat[1:], name[i:]) {
				return true
			}
		}
		return false
	}
	if len(name) == 0 {
		return false
	}
	ok, _ := path.Match(pat[0], name[0])
	return ok && matchSegs(pat[1:], name[1:])
}
