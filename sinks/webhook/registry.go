package webhook

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/pagewatch/pagewatch/broker/ratelimit"
	"github.com/pagewatch/pagewatch/pipeline/notify"
)

// Blocks is the table of receiver kinds: one field per kind, its YAML
// key the kind's name, which is also the receiver's `type:`.
// config.Receiver embeds it inline, so `type: slack` sits beside
// `slack: {...}` and each block is decoded by the strict decoder like
// any other key (unknown keys are errors naming the key) and masked by
// --check-config like any other secret. Config, the worker and the
// default limits all read the kinds from here; a kind is its file (a
// config type that is a kindConfig, and its receiver) and its field.
type Blocks struct {
	Webhook  *Config         `yaml:"webhook"`
	Slack    *SlackConfig    `yaml:"slack"`
	MSTeams  *MSTeamsConfig  `yaml:"msteams"`
	Discord  *DiscordConfig  `yaml:"discord"`
	Telegram *TelegramConfig `yaml:"telegram"`
	Ntfy     *NtfyConfig     `yaml:"ntfy"`
}

// kindConfig is what a kind's config block does for the table.
type kindConfig interface {
	// Validate reports every problem, naming the key.
	Validate(key string) error
	// defaultLimit is the service's published limit for one webhook,
	// chat or topic, used when the receiver sets no rate_limit.
	defaultLimit() ratelimit.Limit
	// receiver makes the receiver called name.
	receiver(name string) (notify.Receiver, error)
}

// Kind is one kind of receiver.
type Kind struct {
	Name string
	// DefaultLimit is the limit of a receiver that sets none.
	DefaultLimit ratelimit.Limit
	field        int // its field in Blocks
}

// kinds are Blocks' fields, in order: the order errors list them in.
var kinds = kindsOf(reflect.TypeFor[Blocks]())

func kindsOf(t reflect.Type) []Kind {
	iface := reflect.TypeFor[kindConfig]()
	var out []Kind
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := f.Tag.Get("yaml")
		if f.Type.Kind() != reflect.Pointer || !f.Type.Implements(iface) || name == "" {
			// Any test of the package fails here, before a kind half
			// added could be shipped.
			panic(fmt.Sprintf("webhook.Blocks.%s: want a yaml-tagged pointer to a kindConfig", f.Name))
		}
		zero := reflect.New(f.Type.Elem()).Interface().(kindConfig)
		out = append(out, Kind{Name: name, DefaultLimit: zero.defaultLimit(), field: i})
	}
	return out
}

// Kinds lists the receiver kinds of this package, in Blocks' order.
func Kinds() []Kind { return slices.Clone(kinds) }

// LookupKind returns the kind called name.
func LookupKind(name string) (Kind, bool) {
	i := slices.IndexFunc(kinds, func(k Kind) bool { return k.Name == name })
	if i < 0 {
		return Kind{}, false
	}
	return kinds[i], true
}

// noPublishedLimit is the limit of a service that publishes none (our
// own webhook): ten a second, bursts of ten.
var noPublishedLimit = ratelimit.Limit{Rate: 10, Per: time.Second, Burst: 10}

// DefaultLimit is a receiver type's rate limit when the config sets
// none: its kind's DefaultLimit, and for a type of no kind here (email
// is config's) that of a service without a published limit.
func DefaultLimit(typ string) ratelimit.Limit {
	if k, ok := LookupKind(typ); ok {
		return k.DefaultLimit
	}
	return noPublishedLimit
}

// block is k's block in b; nil when it is not given.
func (k Kind) block(b Blocks) kindConfig {
	f := reflect.ValueOf(b).Field(k.field)
	if f.IsNil() {
		return nil
	}
	return f.Interface().(kindConfig)
}

// ValidateBlocks checks the blocks of a receiver of type typ, naming
// each key under key ("receivers[2]"): typ's block must be given and
// valid when typ is a kind of this package, and no other kind's may be
// given. A type of no kind here (email) may have none of these blocks.
// (A function, not a method: promoted into config.Receiver, a Validate
// would read as checking the whole receiver.)
func ValidateBlocks(b Blocks, typ, key string) error {
	var errs []error
	for _, k := range kinds {
		blk := k.block(b)
		switch {
		case k.Name != typ && blk != nil:
			errs = append(errs, fmt.Errorf("%s.%s: given for a receiver of type %s", key, k.Name, typ))
		case k.Name == typ && blk == nil:
			errs = append(errs, fmt.Errorf("%s.%s: must be given for a receiver of type %s", key, k.Name, typ))
		case k.Name == typ:
			errs = append(errs, blk.Validate(key+"."+k.Name))
		}
	}
	return errors.Join(errs...)
}

// NewReceiver makes the receiver called name, of type typ, from its
// block in b.
func NewReceiver(b Blocks, typ, name string) (notify.Receiver, error) {
	k, ok := LookupKind(typ)
	if !ok {
		return nil, fmt.Errorf("no receiver kind %q", typ)
	}
	blk := k.block(b)
	if blk == nil {
		return nil, fmt.Errorf("no %s block for a receiver of type %s", typ, typ)
	}
	// Its errors name the block ("slack.url: ..."); the caller names
	// the receiver.
	return blk.receiver(name)
}

// asReceiver returns a constructor's receiver as a notify.Receiver, and
// on failure a nil one (not a typed nil, which is not == nil).
func asReceiver[R notify.Receiver](r R, err error) (notify.Receiver, error) {
	if err != nil {
		return nil, err
	}
	return r, nil
}
