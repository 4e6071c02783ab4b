package visitor

// Config is the `ingest.tail.visitors:` section.
type Config struct {
	// Enabled makes the tailer give each hit a client key (see the
	// package comment), so reports can count visitors as well as hits.
	// Off, hits carry key 0 ("no client key") and no salt is made.
	Enabled bool `yaml:"enabled"`
}

// DefaultConfig returns the defaults: on, since the key holds nothing
// personal (docs/privacy.md).
func DefaultConfig() Config { return Config{Enabled: true} }

// Validate reports every problem, naming its key under
// ingest.tail.visitors. There is none yet: the section has a switch only;
// Validate is here so the config package treats it like every other.
func (c Config) Validate() error { return nil }
