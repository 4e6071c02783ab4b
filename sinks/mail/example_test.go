package mail_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/pagewatch/pagewatch/pipeline/notify"
	"github.com/pagewatch/pagewatch/sinks/mail"
)

// The file transport writes each notification as an .eml file named after
// its crossing key, which is handy for demos and for checking templates.
func Example() {
	dir, err := os.MkdirTemp("", "pagewatch-outbox")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	cfg := mail.DefaultConfig() // transport: file
	cfg.File.Dir = dir
	sender, err := mail.New(cfg, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sender.Close()

	err = sender.Send(context.Background(), notify.Notification{
		Key:        "pricing-hourly.3f2a9c.1",
		Rule:       "pricing-hourly",
		Site:       "example.com",
		Path:       "/pricing",
		Count:      1042,
		Threshold:  1000,
		Window:     "1h",
		CrossedAt:  time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC),
		Recipients: []string{"ops@example.com"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.eml"))
	for _, f := range files {
		fmt.Println(filepath.Base(f))
	}
	// Output: pricing-hourly.3f2a9c.1.eml
}
