package console

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/pagewatch/pagewatch/domain/traffic"
	"github.com/pagewatch/pagewatch/pipeline/tail/tailstatus"
)

// Levels of an answer on the pipeline page, each a colour there.
const (
	levelOK   = "ok"
	levelWarn = "warn"
	levelBad  = "bad"
)

// The pipeline page's thresholds. The page states them beside its
// answers (thresholdNotes), so an operator knows what a colour means
// without reading this.
const (
	// A file with bytes behind and no batch stored for this long is
	// stuck (a tailer keeps up within a poll while it runs).
	fileStuckWarn = 10 * time.Second
	fileStuckBad  = time.Minute
	// The oldest hit batch no loader has acknowledged.
	loaderWarn = time.Minute
	loaderBad  = 5 * time.Minute
	// The last sweep: sweeps run every 10 s by default.
	sweepAgoWarn = time.Minute
	sweepAgoBad  = 5 * time.Minute
	sweepTookBad = 30 * time.Second
	// The oldest notification job no worker has finished.
	jobsWarn = time.Minute
	jobsBad  = 10 * time.Minute
)

// thresholdNotes say the thresholds in words, in the order of the answers.
func thresholdNotes() []string {
	return []string{
		"Tailers: silent (red) when the newest heartbeat is older than 3 heartbeat intervals (15 s by default); stopped (amber) when its last heartbeat said it stopped; a record is gone 30 s after the last heartbeat.",
		fmt.Sprintf("Tailed files: red when a file has bytes behind and nothing stored for %s or its tailer is silent, amber after %s.", span(fileStuckBad), span(fileStuckWarn)),
		fmt.Sprintf("Loader: red when the oldest hit batch not yet acknowledged by a loader is older than %s, amber after %s.", span(loaderBad), span(loaderWarn)),
		fmt.Sprintf("Sweeper: red when the last sweep failed, is older than %s or none is recorded, amber when older than %s or it took over %s.", span(sweepAgoBad), span(sweepAgoWarn), span(sweepTookBad)),
		fmt.Sprintf("Jobs: red when the oldest job no worker has finished is older than %s, amber after %s.", span(jobsBad), span(jobsWarn)),
	}
}

// answerView is one of the operator's questions, answered.
type answerView struct {
	Question string `json:"question"`
	Answer   string `json:"answer"`
	Detail   string `json:"detail"`
	Level    string `json:"level"`
}

// tailerView is one tailer process, from its heartbeat.
type tailerView struct {
	Instance, Host, Version string
	Started, Heartbeat      string // when it started; its heartbeat's age
	Level, State            string
}

// tailedView is one input a tailer follows.
type tailedView struct {
	Instance, Host, Kind, Name string
	Size, Offset, Behind       string // "" for a stream's size and behind
	LastPublish, Ago           string
	Lines                      string
	Level, Why                 string
}

// receiverView is one receiver's held crossings.
type receiverView struct {
	Name string
	Held int
}

// operatorView is the operator's part of the pipeline page.
type operatorView struct {
	Answers    []answerView   `json:"answers"`
	Tailers    []tailerView   `json:"-"`
	Tailed     []tailedView   `json:"-"`
	Receivers  []receiverView `json:"-"`
	Thresholds []string       `json:"-"`
}

// operatorAnswers answers the operator's questions from what NATS knows.
func (s *pipelinePages) operatorAnswers(ps PipelineState, now time.Time) operatorView {
	v := operatorView{Thresholds: thresholdNotes()}
	op := ps.Operator
	silent := 0
	for _, t := range op.Tailers {
		tv := s.tailer(t, now)
		if tv.Level == levelBad {
			silent++
		}
		v.Tailers = append(v.Tailers, tv)
		for _, in := range t.Inputs {
			v.Tailed = append(v.Tailed, s.tailed(t, in, tv.Level == levelBad, now))
		}
	}
	a := answerView{Question: "Is any tailer silent?", Level: levelOK,
		Answer: "no: " + plural(len(op.Tailers), "tailer") + " heard from"}
	switch {
	case len(op.Tailers) == 0:
		a.Answer, a.Level, a.Detail = "no tailer has written a heartbeat", levelWarn, "none in the last 30 s: is `ingest tail` running, and at this version?"
	case silent > 0:
		a.Answer, a.Level = fmt.Sprintf("yes: %d of %d", silent, len(op.Tailers)), levelBad
	}
	v.Answers = append(v.Answers, a)
	stuck := 0
	for _, f := range v.Tailed {
		if f.Level == levelBad {
			stuck++
		}
	}
	a = answerView{Question: "Is any tailed file falling behind?", Level: levelOK, Answer: "no: " + plural(len(v.Tailed), "input")}
	if stuck > 0 {
		a.Answer, a.Level = fmt.Sprintf("yes: %d of %d", stuck, len(v.Tailed)), levelBad
	}
	v.Answers = append(v.Answers, a)
	v.Answers = append(v.Answers, consumerAnswer(ps, now, "_HITS", "How far behind is the loader?", "hit batches", loaderWarn, loaderBad),
		s.sweepAnswer(op, now),
		consumerAnswer(ps, now, "_JOBS", "How many jobs are waiting?", "jobs", jobsWarn, jobsBad))
	for _, name := range slices.Sorted(maps.Keys(op.Held)) {
		v.Receivers = append(v.Receivers, receiverView{Name: name, Held: op.Held[name]})
	}
	return v
}

func (s *pipelinePages) tailer(t tailstatus.Tailer, now time.Time) tailerView {
	tv := tailerView{Instance: t.Instance, Host: t.Host, Version: t.Version, Started: s.timeIn(t.Started),
		Heartbeat: ago(now, t.At), Level: levelOK, State: "running"}
	interval := t.Interval
	if interval <= 0 {
		interval = tailstatus.Interval
	}
	switch {
	case t.Stopped:
		tv.Level, tv.State = levelWarn, "stopped"
	case now.Sub(t.At) > tailstatus.SilentAfter(interval):
		tv.Level, tv.State = levelBad, "silent"
	}
	return tv
}

func (s *pipelinePages) tailed(t tailstatus.Tailer, in tailstatus.Input, silent bool, now time.Time) tailedView {
	fv := tailedView{Instance: t.Instance, Host: t.Host, Kind: in.Kind, Name: in.Name,
		Offset: bytesShown(in.Offset), LastPublish: s.timeIn(in.LastPublish), Ago: ago(now, in.LastPublish),
		Lines: traffic.FormatCount(uint64(max(in.Lines, 0))), Level: levelOK}
	if in.Kind == tailstatus.KindFile {
		fv.Size, fv.Behind = bytesShown(in.Size), bytesShown(in.Behind)
	}
	quiet := now.Sub(in.LastPublish)
	if in.LastPublish.IsZero() {
		quiet = now.Sub(t.Started)
	}
	switch {
	case silent:
		fv.Level, fv.Why = levelBad, "tailer silent: these figures are its last"
	case in.Standby:
		fv.Why = "standing by: another tailer on the host follows it"
	case in.Behind > 0 && quiet > fileStuckBad:
		fv.Level, fv.Why = levelBad, "bytes behind, nothing stored for "+quiet.Round(time.Second).String()
	case in.Behind > 0 && quiet > fileStuckWarn:
		fv.Level, fv.Why = levelWarn, "bytes behind, nothing stored for "+quiet.Round(time.Second).String()
	}
	return fv
}

// consumerAnswer says how far the consumers of the stream named
// <PREFIX><suffix> are behind: messages not yet delivered, delivered and
// not yet acknowledged, and how long the oldest of them has waited.
func consumerAnswer(ps PipelineState, now time.Time, suffix, question, what string, warn, bad time.Duration) answerView {
	a := answerView{Question: question, Level: levelOK}
	var pending, acking uint64
	var oldest time.Time
	n := 0
	for _, c := range ps.Consumers {
		if !strings.HasSuffix(c.Stream, suffix) {
			continue
		}
		n++
		pending += c.Pending
		acking += uint64(max(c.AckPending, 0))
		if at, ok := ps.Operator.Oldest[c.Stream+"/"+c.Name]; ok && (oldest.IsZero() || at.Before(oldest)) {
			oldest = at
		}
	}
	if n == 0 {
		a.Answer, a.Detail = "no consumer yet", "its daemon has not started on this NATS"
		return a
	}
	a.Answer = fmt.Sprintf("%s %s waiting, %s being processed", traffic.FormatCount(pending), what, traffic.FormatCount(acking))
	if oldest.IsZero() {
		a.Detail = "caught up"
		return a
	}
	waited := max(now.Sub(oldest), 0)
	a.Detail = "the oldest has waited " + waited.Round(time.Second).String()
	switch {
	case waited > bad:
		a.Level = levelBad
	case waited > warn:
		a.Level = levelWarn
	}
	return a
}

func (s *pipelinePages) sweepAnswer(op OperatorState, now time.Time) answerView {
	a := answerView{Question: "When did the last sweep run, and how long did it take?", Level: levelOK}
	last := op.Sweep.Last
	if last == nil {
		a.Answer, a.Level, a.Detail = "no sweep recorded", levelBad, "is the sweeper running, and at this version?"
		return a
	}
	since := max(now.Sub(last.Started), 0)
	a.Answer = fmt.Sprintf("%s ago, took %s", since.Round(time.Second), last.Took.Round(time.Millisecond))
	a.Detail = "at " + s.timeIn(last.Started) + " by " + last.Owner
	switch {
	case last.Error != "":
		a.Level, a.Detail = levelBad, "failed: "+last.Error
		if ok := op.Sweep.LastOK; ok != nil {
			a.Detail += "; last good sweep " + max(now.Sub(ok.Started), 0).Round(time.Second).String() + " ago"
		}
	case since > sweepAgoBad:
		a.Level = levelBad
	case since > sweepAgoWarn || last.Took > sweepTookBad:
		a.Level = levelWarn
	}
	return a
}

func ago(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return max(now.Sub(t), 0).Round(time.Second).String()
}

// bytesShown writes a byte count people read: "1,234,567 B (1.2 MiB)".
func bytesShown(n int64) string { return traffic.FormatBytes(n) }

// span writes a threshold as people say it: "1 min", "10 s".
func span(d time.Duration) string {
	if d >= time.Minute && d%time.Minute == 0 {
		return fmt.Sprintf("%d min", d/time.Minute)
	}
	return fmt.Sprintf("%d s", d/time.Second)
}

// plural is n and noun, with an s unless n is 1: "1 tailer", "2 inputs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
