package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/testserver/smtptest"
)

// TestSecretsNeverLogged gives every daemon secrets from a file and from
// environment variables, logs at debug level in both formats, and makes
// each secret fail (a wrong ClickHouse password, a rejected SMTP login),
// since failures are where clients put credentials into errors. No output
// of any process may contain a secret.
func TestSecretsNeverLogged(t *testing.T) {
	const (
		smtpUser     = "mailer"
		smtpPassword = "Secr3t-smtp-env-9931"
		natsPassword = "Secr3t-nats-env-5512" // the test server has no auth: accepted, unused
		chPassword   = "Secr3t-ch-file-7781"  // default has no password: refused
	)
	b := setupWith(t, setupOptions{rules: rules, load: defaultLoad, worker: defaultWorker,
		smtp: []smtptest.Option{smtptest.WithTLS(), smtptest.WithAuth(smtpUser, "the-right-one")}})
	chFile := filepath.Join(b.dir, "clickhouse.password")
	writeFile(t, chFile, chPassword+"\n")
	t.Setenv("PAGEWATCH_TEST_NATS_PASSWORD", natsPassword)
	t.Setenv("PAGEWATCH_TEST_SMTP_PASSWORD", smtpPassword)
	editConfig(t, b.config,
		fmt.Sprintf("nats: {url: %q}", b.nats.URL),
		fmt.Sprintf("nats: {url: %q, user: pagewatch, password: {env: PAGEWATCH_TEST_NATS_PASSWORD}}", b.nats.URL),
		fmt.Sprintf("smtp: {host: %q, port: %d, tls: none}", b.smtp.Host, b.smtp.Port),
		fmt.Sprintf("smtp: {host: %q, port: %d, tls: mandatory, insecure_skip_verify: true, auth: plain, username: %s, password: {env: PAGEWATCH_TEST_SMTP_PASSWORD}}", b.smtp.Host, b.smtp.Port, smtpUser))
	wrongCH := filepath.Join(b.dir, "wrong-clickhouse.yaml")
	data, _ := os.ReadFile(b.config)
	writeFile(t, wrongCH, strings.Replace(string(data),
		fmt.Sprintf("clickhouse: {addr: [%q]}", b.ch.Addr),
		fmt.Sprintf("clickhouse: {addr: [%q], password: {file: %q}}", b.ch.Addr, chFile), 1))

	var outputs []string
	// Refused by ClickHouse: each daemon that uses it exits with the error.
	for _, args := range [][]string{{"sweeper", "run"}, {"ingest", "load"}, {"worker", "run"}} {
		out := runOnce(t, b, wrongCH, args[0], append(args[1:], "--log-level", "debug", "--log-format", "json")...)
		if !strings.Contains(out, "code: 193") && !strings.Contains(out, "code: 516") { // wrong password (18.16), authentication failed (current)
			t.Errorf("%s with a wrong ClickHouse password: no authentication error in:\n%s", strings.Join(args, " "), out)
		}
		outputs = append(outputs, out)
	}
	// --check-config prints the config, secrets masked.
	for _, config := range []string{b.config, wrongCH} {
		out := runOnce(t, b, config, "worker", "--check-config")
		if !strings.Contains(out, "[redacted]") {
			t.Errorf("--check-config shows no masked secret:\n%s", out)
		}
		outputs = append(outputs, out)
	}
	// A running worker whose SMTP login is refused, logging at debug.
	worker := b.startConfig(t, b.config, "worker", "run", "--log-level", "debug")
	c := b.jobsClient(t)
	c.publish(t, workerJob(1, 1))
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, _ := os.ReadFile(worker.out.Name())
		if strings.Contains(string(data), "535") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker logged no refused login (535) in 30s:\n%s", tailBytes(data, 3000))
		}
		time.Sleep(100 * time.Millisecond)
	}
	worker.stop(t)
	data, err := os.ReadFile(worker.out.Name())
	if err != nil {
		t.Fatal(err)
	}
	outputs = append(outputs, string(data))

	for _, out := range outputs {
		for _, secret := range []string{smtpPassword, natsPassword, chPassword} {
			if strings.Contains(out, secret) {
				t.Errorf("a secret (%.8s...) is in the output:\n%s", secret, out)
			}
		}
	}
}

// runOnce runs a daemon that is expected to exit by itself and returns
// its output.
func runOnce(t *testing.T, b *bundle, config, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(b.bin, bin), append(args, "--config", config)...)
	out, _ := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s %v did not exit within 60s:\n%s", bin, args, out)
	}
	return string(out)
}
