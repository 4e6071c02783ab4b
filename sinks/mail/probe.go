package mail

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Probe reports whether mail can be delivered as cfg says, cheaply enough
// for /readyz: for SMTP, the server accepts a connection and greets with
// 220 (with implicit TLS the port accepting is all it checks); for the
// file transport, the directory is writable. It does not authenticate:
// a rejected login shows as failed jobs, not as unreadiness.
func Probe(ctx context.Context, cfg Config) error {
	if cfg.Transport != TransportSMTP {
		if err := unix.Access(cfg.File.Dir, unix.W_OK); err != nil {
			return fmt.Errorf("mail.file.dir %s: not writable: %w", cfg.File.Dir, err)
		}
		return nil
	}
	addr := net.JoinHostPort(cfg.SMTP.Host, strconv.Itoa(cfg.SMTP.Port))
	timeout := cfg.SMTP.Timeout
	if timeout <= 0 || timeout > 5*time.Second {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("smtp %s: %w", addr, err)
	}
	defer conn.Close()
	if cfg.SMTP.TLS == TLSImplicit {
		return nil
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	line, err := readReply(bufio.NewReader(conn))
	if err != nil {
		return fmt.Errorf("smtp %s: greeting: %w", addr, err)
	}
	_, _ = conn.Write([]byte("QUIT\r\n"))
	if !strings.HasPrefix(line, "220") {
		return fmt.Errorf("smtp %s: greeted with %q, not 220", addr, clean(line, 120))
	}
	return nil
}

// readReply reads one SMTP reply, following 220- continuation lines, and
// returns its last line.
func readReply(r *bufio.Reader) (string, error) {
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return "", err
		}
		line = strings.TrimRight(line, "\r\n")
		if len(line) < 4 || line[3] != '-' {
			return line, nil
		}
	}
}
