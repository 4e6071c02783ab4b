package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testserver/smtptest"
)

// TestSecretsNeverLogged gives every daemon secrets from a file and from
// environment variables, logs at debug level in both formats, and makes
// each secret fail in turn (a refused NATS login, a wrong ClickHouse
// password, a rejected SMTP login), since failures are where clients put
// credentials into errors. No output of any process may contain a secret,
// nor the base64 of an SMTP AUTH PLAIN exchange.
func TestSecretsNeverLogged(t *testing.T) {
	const (
		natsUser      = "pagewatch"
		natsPassword  = "Secr3t-nats-right-4410"
		wrongNATS     = "Secr3t-nats-wrong-5512"
		chPassword    = "Secr3t-ch-file-7781" // default has no password: refused
		smtpUser      = "mailer"
		smtpPassword  = "Secr3t-smtp-env-9931"
		natsPassVar   = "PAGEWATCH_TEST_NATS_PASSWORD"
		smtpPassVar   = "PAGEWATCH_TEST_SMTP_PASSWORD"
		debugJSONArgs = "--log-level=debug --log-format=json"
	)
	b := setupWith(t, setupOptions{rules: rules, load: defaultLoad, worker: defaultWorker,
		smtp: []smtptest.Option{smtptest.WithTLS(), smtptest.WithAuth(smtpUser, "the-right-one")},
		nats: func(o *server.Options) {
			o.Users = []*server.User{{Username: natsUser, Password: natsPassword}}
		},
		natsUser: natsUser, natsPassword: natsPassword,
	})
	chFile := filepath.Join(b.dir, "clickhouse.password")
	writeFile(t, chFile, chPassword+"\n")
	t.Setenv(smtpPassVar, smtpPassword)
	editConfig(t, b.config,
		fmt.Sprintf("nats: {url: %q}", b.natsURL()),
		fmt.Sprintf("nats: {url: %q, user: %s, password: {env: %s}}", b.natsURL(), natsUser, natsPassVar),
		fmt.Sprintf("smtp: {host: %q, port: %d, tls: none}", b.smtp.Host, b.smtp.Port),
		fmt.Sprintf("smtp: {host: %q, port: %d, tls: mandatory, insecure_skip_verify: true, auth: plain, username: %s, password: {env: %s}}", b.smtp.Host, b.smtp.Port, smtpUser, smtpPassVar))
	wrongCH := filepath.Join(b.dir, "wrong-clickhouse.yaml")
	data, _ := os.ReadFile(b.config)
	writeFile(t, wrongCH, strings.Replace(string(data),
		b.clickhouseSection(),
		strings.TrimSuffix(b.clickhouseSection(), "}")+fmt.Sprintf(", password: {file: %q}}", chFile), 1))
	daemons := [][]string{{"ingest", "tail"}, {"ingest", "load"}, {"sweeper", "run"}, {"worker", "run"}}

	var outputs []string
	// The NATS login refused: every daemon stops at start-up, saying so.
	t.Setenv(natsPassVar, wrongNATS)
	for _, d := range daemons {
		out := runOnce(t, b, b.config, d[0], append(d[1:], strings.Fields(debugJSONArgs)...)...)
		if !strings.Contains(strings.ToLower(out), "authorization violation") {
			t.Errorf("%s with a wrong NATS password: no authorization error in:\n%s", strings.Join(d, " "), out)
		}
		outputs = append(outputs, out)
	}
	// ClickHouse refuses the password: each daemon that uses it stops.
	t.Setenv(natsPassVar, natsPassword)
	for _, d := range daemons[1:] {
		out := runOnce(t, b, wrongCH, d[0], append(d[1:], strings.Fields(debugJSONArgs)...)...)
		if !strings.Contains(out, "code: 193") && !strings.Contains(out, "code: 516") { // wrong password (18.16), authentication failed (current)
			t.Errorf("%s with a wrong ClickHouse password: no authentication error in:\n%s", strings.Join(d, " "), out)
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
	testcheck.Eventually(t, 30*time.Second, "the worker to log a refused login (535)", func() error {
		data, _ := os.ReadFile(worker.out.Name())
		if !strings.Contains(string(data), "535") {
			return fmt.Errorf("its log ends:\n%s", tailBytes(data, 3000))
		}
		return nil
	})
	worker.stop(t)
	data, err := os.ReadFile(worker.out.Name())
	if err != nil {
		t.Fatal(err)
	}
	outputs = append(outputs, string(data))

	plain := base64.StdEncoding.EncodeToString([]byte("\x00" + smtpUser + "\x00" + smtpPassword))
	for _, out := range outputs {
		for _, secret := range []string{natsPassword, wrongNATS, chPassword, smtpPassword, plain} {
			if strings.Contains(out, secret) {
				t.Errorf("a secret (%.8s...) is in the output:\n%s", secret, out)
			}
		}
	}
	t.Logf("%d outputs of 4 daemons searched for 4 secrets and an AUTH PLAIN payload", len(outputs))
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
