package notify

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/domain/crossing"
)

// job is one fetched notification job, held until a runner takes it.
type job struct {
	msg jetstream.Msg
	x   crossing.Crossing
}

// schedule holds the jobs a worker process has fetched, grouped by page,
// and hands each page to one runner at a time. The runner that holds a
// page's lock takes that page's later jobs too, so jobs for one page that
// arrive together (a queue after an outage) run one after another under
// one lock instead of colliding on it. Conflicts, and so deferrals, remain
// only between worker processes that fetched jobs of the same page.
//
// Ready pages are handed out site by site in turn (round robin), so a
// site with thousands of crossings queued cannot starve another site's
// one: that one is taken as soon as a runner is free, however far back in
// the queue it was fetched, as long as it is within Prefetch.
type schedule struct {
	mu      sync.Mutex
	cond    *sync.Cond // signalled when a page becomes ready or on close
	pages   map[string]*pageJobs
	ready   map[string][]string // site → its pages with jobs and no runner, oldest first
	sites   []string            // sites with ready pages, in turn order
	turn    int                 // index in sites of the next site to serve
	nReady  int
	held    int // jobs held, not yet taken by a runner
	room    chan struct{}
	closed  bool
	maxHeld int
}

type pageJobs struct {
	site    string
	jobs    []job
	running bool
}

func newSchedule(maxHeld int) *schedule {
	s := &schedule{pages: map[string]*pageJobs{}, ready: map[string][]string{}, room: make(chan struct{}, 1), maxHeld: maxHeld}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// add queues a fetched job behind its page's other jobs.
func (s *schedule) add(page string, j job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pages[page]
	if p == nil {
		p = &pageJobs{site: j.x.Site}
		s.pages[page] = p
	}
	p.jobs = append(p.jobs, j)
	s.held++
	if !p.running && len(p.jobs) == 1 {
		s.makeReady(page, p.site)
	}
}

// makeReady queues a page behind its site's other ready pages; a site
// new to the turn order goes last in it.
func (s *schedule) makeReady(page, site string) {
	if len(s.ready[site]) == 0 {
		s.sites = append(s.sites, site)
	}
	s.ready[site] = append(s.ready[site], page)
	s.nReady++
	s.cond.Signal()
}

// takeReady takes the next site's oldest ready page.
func (s *schedule) takeReady() string {
	if s.turn >= len(s.sites) {
		s.turn = 0
	}
	site := s.sites[s.turn]
	q := s.ready[site]
	page := q[0]
	if len(q) == 1 {
		delete(s.ready, site)
		s.sites = append(s.sites[:s.turn], s.sites[s.turn+1:]...) // the next site moves into this turn
	} else {
		s.ready[site] = q[1:]
		s.turn++
	}
	s.nReady--
	return page
}

// space is how many more jobs the fetcher may take.
func (s *schedule) space() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxHeld - s.held
}

// waitRoom blocks until a runner took a job or ctx ends.
func (s *schedule) waitRoom(ctx context.Context) {
	select {
	case <-s.room:
	case <-ctx.Done():
	}
}

// nextPage blocks until a page is ready and gives it to the caller, who
// runs it until pop says it is empty and then calls finish. It returns ""
// once the schedule is closed.
func (s *schedule) nextPage() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.nReady == 0 && !s.closed {
		s.cond.Wait()
	}
	if s.closed {
		return ""
	}
	page := s.takeReady()
	s.pages[page].running = true
	return page
}

// pop takes the page's next job; ok is false when it has none left.
func (s *schedule) pop(page string) (j job, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pages[page]
	if len(p.jobs) == 0 {
		return job{}, false
	}
	j = p.jobs[0]
	p.jobs[0] = job{}
	p.jobs = p.jobs[1:]
	s.taken(1)
	return j, true
}

// takeAll empties the page's queue, for jobs the runner cannot run.
func (s *schedule) takeAll(page string) []job {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pages[page]
	jobs := p.jobs
	p.jobs = nil
	s.taken(len(jobs))
	return jobs
}

func (s *schedule) taken(n int) {
	s.held -= n
	if n > 0 {
		select {
		case s.room <- struct{}{}:
		default:
		}
	}
}

// finish ends a runner's turn on a page, after it released the page's
// lock; jobs that arrived since its last pop make the page ready again.
func (s *schedule) finish(page string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pages[page]
	p.running = false
	if len(p.jobs) > 0 {
		s.makeReady(page, p.site)
		return
	}
	delete(s.pages, page)
}

// close wakes every runner waiting for a page and returns the jobs no
// runner took, for the caller to hand back.
func (s *schedule) close() []job {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.cond.Broadcast()
	var left []job
	for _, p := range s.pages {
		if !p.running {
			left = append(left, p.jobs...)
			s.taken(len(p.jobs))
			p.jobs = nil
		}
	}
	return left
}

// heldMsgs lists the messages waiting for a runner, for progress acks.
func (s *schedule) heldMsgs() []jetstream.Msg {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []jetstream.Msg
	for _, p := range s.pages {
		for _, j := range p.jobs {
			out = append(out, j.msg)
		}
	}
	return out
}

// keepAlive sends progress acks for held jobs every interval, so a job
// that waits behind its page's earlier jobs is not redelivered meanwhile.
func (s *schedule) keepAlive(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, m := range s.heldMsgs() {
				_ = m.InProgress()
			}
		}
	}
}

// addIfRunning queues jobs handed over by another worker process behind
// the page's jobs, only while one of our runners has the page: that
// runner holds the page's lease and runs them, or, if it is just letting
// go, finish makes the page ready again and the next runner locks it
// afresh. Either way the jobs run under a lease of ours.
func (s *schedule) addIfRunning(page string, jobs []job) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pages[page]
	if s.closed || p == nil || !p.running {
		return false
	}
	p.jobs = append(p.jobs, jobs...)
	s.held += len(jobs)
	return true
}

// putBack returns jobs taken by takeAll to the front of the page's queue,
// for the runner that took them.
func (s *schedule) putBack(page string, jobs []job) {
	if len(jobs) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pages[page]
	p.jobs = append(jobs, p.jobs...)
	s.held += len(jobs)
}
