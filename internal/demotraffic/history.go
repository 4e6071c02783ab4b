package demotraffic

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"
)

// Stats count what was written.
type Stats struct {
	Lines, Crawler int
	Files          []string // oldest first
}

// WriteHistory writes days of history ending at s.End as logrotate's
// daily rotation leaves it beside log (the live file): log holds today
// (UTC) up to End, log.1 yesterday, log.2.gz the day before, and so on to
// log.<days>.gz, the oldest, compressed from the second on as
// delaycompress does. These are the names `ingest tail --from-start`
// backfills, oldest first (pipeline/tail/siblings.go). Days are written
// in parallel, each from its own minutes, so the files are the same
// however many run at once.
func (s *Site) WriteHistory(log string, days int) (Stats, error) {
	if days < 1 {
		return Stats{}, errors.New("demotraffic: at least a day of history")
	}
	today := s.End.Truncate(24 * time.Hour)
	type job struct {
		k        int // 0: the live file
		from, to time.Time
		path     string
	}
	jobs := make([]job, days+1)
	for k := 0; k <= days; k++ {
		from := today.AddDate(0, 0, -k)
		to := from.AddDate(0, 0, 1)
		path := log
		switch {
		case k == 1:
			path = log + ".1"
		case k > 1:
			path = log + "." + strconv.Itoa(k) + ".gz"
		}
		if k == 0 {
			to = s.End
		}
		jobs[days-k] = job{k: k, from: from, to: to, path: path}
	}
	if err := os.MkdirAll(filepath.Dir(log), 0o755); err != nil {
		return Stats{}, err
	}
	stats := make([]Stats, len(jobs))
	errs := make([]error, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				j := jobs[i]
				stats[i], errs[i] = s.writeDay(j.path, j.from, j.to, j.k > 1)
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	var all Stats
	for i, st := range stats {
		if errs[i] != nil {
			return all, errs[i]
		}
		all.Lines += st.Lines
		all.Crawler += st.Crawler
		all.Files = append(all.Files, jobs[i].path)
	}
	return all, nil
}

// writeDay writes the minutes [from, to) to path, gzipped if gz, and
// dates the file when its last line was written, as a rotated log's.
func (s *Site) writeDay(path string, from, to time.Time, gz bool) (st Stats, err error) {
	f, err := os.Create(path)
	if err != nil {
		return st, err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Chtimes(path, to, to)
		}
	}()
	var w io.Writer = f
	var zw *gzip.Writer
	if gz {
		zw, _ = gzip.NewWriterLevel(f, gzip.BestSpeed)
		w = zw
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	for t := from; t.Before(to); t = t.Add(time.Minute) {
		for _, l := range s.Minute(t) {
			if !l.At.Before(to) {
				continue // the live file ends at End, mid-minute
			}
			if _, err := bw.WriteString(l.Text); err != nil {
				return st, fmt.Errorf("write %s: %w", path, err)
			}
			st.Lines++
			if l.Crawler {
				st.Crawler++
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return st, fmt.Errorf("write %s: %w", path, err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return st, fmt.Errorf("write %s: %w", path, err)
		}
	}
	return st, nil
}
