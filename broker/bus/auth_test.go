package bus_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/config/secret"
	"github.com/pagewatch/pagewatch/internal/syncbuf"
	"github.com/pagewatch/pagewatch/internal/testserver/natstest"
)

func newLogger() (*slog.Logger, *syncbuf.Buffer) {
	lb := &syncbuf.Buffer{}
	return slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug})), lb
}

func config(url string) bus.Config {
	cfg := bus.DefaultConfig()
	cfg.URL = url
	cfg.ConnectTimeout = 2 * time.Second
	return cfg
}

// connect validates cfg, as a daemon does, and connects with a deadline so
// a failure cannot hang the test.
func connect(t *testing.T, cfg bus.Config, logger *slog.Logger) (*bus.Bus, error) {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := bus.Connect(ctx, cfg, t.Name(), logger)
	if err == nil {
		t.Cleanup(b.Close)
	}
	return b, err
}

// useJetStream proves the connection is authorised for what pagewatch does:
// a stream publish acknowledged by the server and a KV round trip.
func useJetStream(t *testing.T, b *bus.Bus) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := b.JobsStream(ctx); err != nil {
		t.Fatal(err)
	}
	ack, err := b.JS.Publish(ctx, b.JobsSubject(bus.Key("auth")), []byte("job"))
	if err != nil || ack.Sequence == 0 || ack.Duplicate {
		t.Fatalf("publish: ack %+v, err %v", ack, err)
	}
	kv, err := b.KV(ctx, bus.BucketLocks, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatalf("kv put: %v", err)
	}
	if e, err := kv.Get(ctx, "k"); err != nil || string(e.Value()) != "v" {
		t.Fatalf("kv get: %v", err)
	}
}

// refused checks a failed Connect: quick, for the right reason, and
// without the secret in the error or the log.
func refused(t *testing.T, err error, began time.Time, logs *syncbuf.Buffer, want error, secrets ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("Connect succeeded")
	}
	t.Logf("refused after %v: %v", time.Since(began).Round(time.Millisecond), err)
	if want != nil && !errors.Is(err, want) {
		t.Errorf("err = %v, want %v", err, want)
	}
	// Refusals end the first attempt; they do not wait for the context.
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("refusal took %v", d)
	}
	for _, s := range secrets {
		if strings.Contains(err.Error(), s) {
			t.Errorf("error shows a secret: %v", err)
		}
		if strings.Contains(logs.String(), s) {
			t.Errorf("log shows a secret:\n%s", logs)
		}
	}
}

func TestUserPassword(t *testing.T) {
	const pass = "pw-7f3a9c-hunter2"
	ns := natstest.StartWith(t, func(o *server.Options) {
		o.Users = []*server.User{{Username: "pagewatch", Password: pass}}
	})
	logger, logs := newLogger()
	cfg := config(ns.URL)
	cfg.User, cfg.Password = "pagewatch", secret.New(pass)
	b, err := connect(t, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	useJetStream(t, b)

	cfg.Password = secret.New("not-" + pass)
	began := time.Now()
	_, err = connect(t, cfg, logger)
	refused(t, err, began, logs, nats.ErrAuthorization, pass, cfg.Password.Reveal())

	cfg.User, cfg.Password = "", secret.Value{}
	began = time.Now()
	_, err = connect(t, cfg, logger)
	refused(t, err, began, logs, nats.ErrAuthorization)
}

func TestToken(t *testing.T) {
	const token = "tok-5c0ffee-hunter5"
	ns := natstest.StartWith(t, func(o *server.Options) { o.Authorization = token })
	logger, logs := newLogger()
	cfg := config(ns.URL)
	cfg.Token = secret.New(token)
	b, err := connect(t, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	useJetStream(t, b)

	cfg.Token = secret.New("not-" + token)
	began := time.Now()
	_, err = connect(t, cfg, logger)
	refused(t, err, began, logs, nats.ErrAuthorization, token)
}

// writeSeed writes a user's seed the way `nsc` or an operator would.
func writeSeed(t *testing.T, kp nkeys.KeyPair) string {
	t.Helper()
	seed, err := kp.Seed()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "user.nk")
	if err := os.WriteFile(path, append(seed, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestNkeySeedFile(t *testing.T) {
	user, _ := nkeys.CreateUser()
	pub, _ := user.PublicKey()
	ns := natstest.StartWith(t, func(o *server.Options) {
		o.Nkeys = []*server.NkeyUser{{Nkey: pub}}
	})
	logger, logs := newLogger()
	cfg := config(ns.URL)
	cfg.NkeySeedFile = writeSeed(t, user)
	b, err := connect(t, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	useJetStream(t, b)

	stranger, _ := nkeys.CreateUser()
	seed, _ := stranger.Seed()
	cfg.NkeySeedFile = writeSeed(t, stranger)
	began := time.Now()
	_, err = connect(t, cfg, logger)
	refused(t, err, began, logs, nats.ErrAuthorization, string(seed))
}

// operator is an operator-mode trust chain: operator -> account (with
// JetStream) -> users, resolved from memory as a real deployment resolves
// from a directory or the NATS account server.
type operator struct {
	claims   *jwt.OperatorClaims
	resolver *server.MemAccResolver
	system   string
	account  nkeys.KeyPair
}

func newOperator(t *testing.T) *operator {
	t.Helper()
	okp, _ := nkeys.CreateOperator()
	opub, _ := okp.PublicKey()
	oc := jwt.NewOperatorClaims(opub)
	oc.Name = "pagewatch-test"
	ojwt, err := oc.Encode(okp)
	if err != nil {
		t.Fatal(err)
	}
	claims, err := jwt.DecodeOperatorClaims(ojwt)
	if err != nil {
		t.Fatal(err)
	}
	op := &operator{claims: claims, resolver: &server.MemAccResolver{}}
	store := func(kp nkeys.KeyPair, name string, js bool) string {
		pub, _ := kp.PublicKey()
		ac := jwt.NewAccountClaims(pub)
		ac.Name = name
		if js {
			ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
		}
		s, err := ac.Encode(okp)
		if err != nil {
			t.Fatal(err)
		}
		if err := op.resolver.Store(pub, s); err != nil {
			t.Fatal(err)
		}
		return pub
	}
	sys, _ := nkeys.CreateAccount()
	op.system = store(sys, "SYS", false)
	op.account, _ = nkeys.CreateAccount()
	store(op.account, "PAGEWATCH", true)
	return op
}

func (op *operator) configure(o *server.Options) {
	o.TrustedOperators = []*jwt.OperatorClaims{op.claims}
	o.AccountResolver = op.resolver
	o.SystemAccount = op.system
}

// creds writes a .creds file for a new user signed by signer.
func creds(t *testing.T, signer nkeys.KeyPair) (path string, seed []byte) {
	t.Helper()
	user, _ := nkeys.CreateUser()
	pub, _ := user.PublicKey()
	uc := jwt.NewUserClaims(pub)
	ujwt, err := uc.Encode(signer)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ = user.Seed()
	data, err := jwt.FormatUserConfig(ujwt, seed)
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), "pagewatch.creds")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, seed
}

func TestCredsFile(t *testing.T) {
	op := newOperator(t)
	ns := natstest.StartWith(t, op.configure)
	logger, logs := newLogger()
	cfg := config(ns.URL)
	cfg.CredsFile, _ = creds(t, op.account)
	b, err := connect(t, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	useJetStream(t, b)

	// A user of an account this operator never signed.
	unknown, _ := nkeys.CreateAccount()
	var seed []byte
	cfg.CredsFile, seed = creds(t, unknown)
	began := time.Now()
	_, err = connect(t, cfg, logger)
	refused(t, err, began, logs, nats.ErrAuthorization, string(seed))
}

func TestValidateAuth(t *testing.T) {
	dir := t.TempDir()
	user, _ := nkeys.CreateUser()
	seedFile := writeSeed(t, user)
	account, _ := nkeys.CreateAccount()
	credsFile, _ := creds(t, account)
	garbage := filepath.Join(dir, "garbage.nk")
	if err := os.WriteFile(garbage, []byte("not a seed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		edit func(*bus.Config)
		want []string
	}{
		{"creds alone", func(c *bus.Config) { c.CredsFile = credsFile }, nil},
		{"nkey alone", func(c *bus.Config) { c.NkeySeedFile = seedFile }, nil},
		{"creds and nkey", func(c *bus.Config) { c.CredsFile, c.NkeySeedFile = credsFile, seedFile },
			[]string{"nats.creds_file and nats.nkey_seed_file: set together"}},
		{"user and token", func(c *bus.Config) { c.User, c.Password, c.Token = "u", secret.New("p"), secret.New("t0ken") },
			[]string{"nats.user/nats.password and nats.token: set together"}},
		{"all four", func(c *bus.Config) {
			c.CredsFile, c.NkeySeedFile, c.User, c.Password, c.Token = credsFile, seedFile, "u", secret.New("p"), secret.New("t0ken")
		}, []string{"nats.creds_file and nats.nkey_seed_file and nats.user/nats.password and nats.token: set together"}},
		{"missing creds", func(c *bus.Config) { c.CredsFile = filepath.Join(dir, "nope.creds") },
			[]string{"nats.creds_file: open " + filepath.Join(dir, "nope.creds") + ": no such file"}},
		{"creds is a directory", func(c *bus.Config) { c.CredsFile = dir },
			[]string{"nats.creds_file: " + dir + " is a directory"}},
		{"missing seed", func(c *bus.Config) { c.NkeySeedFile = filepath.Join(dir, "nope.nk") },
			[]string{"nats.nkey_seed_file: open " + filepath.Join(dir, "nope.nk")}},
		{"seed without a seed", func(c *bus.Config) { c.NkeySeedFile = garbage },
			[]string{"nats.nkey_seed_file: " + garbage + ": "}},
		{"tls files while off", func(c *bus.Config) { c.TLS.CAFile = credsFile },
			[]string{"nats.tls.ca_file: set while nats.tls.enabled is false"}},
		{"tls cert without key", func(c *bus.Config) { c.TLS.Enabled, c.TLS.CertFile = true, credsFile },
			[]string{"nats.tls.cert_file: set without nats.tls.key_file"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := bus.DefaultConfig()
			c.edit(&cfg)
			err := cfg.Validate()
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate accepted it")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "t0ken") || strings.Contains(err.Error(), "=p") {
				t.Errorf("error shows a secret: %v", err)
			}
		})
	}
}
