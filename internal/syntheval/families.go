package syntheval

import (
	"fmt"
	"time"
)

// Start is when every page's rows begin (a Monday): eight weeks from it
// cross the spring change of America's clocks (8 March 2026).
var Start = time.Date(2026, 2, 2, 0, 0, 0, 0, time.UTC)

// Sizes are the pages' busiest hours: a small blog's page to a big
// site's home.
var Sizes = []float64{30, 300, 3000, 30000}

// Steps are the row intervals counts come in.
var Steps = []time.Duration{5 * time.Minute, 15 * time.Minute, 30 * time.Minute}

const (
	hour = time.Hour
	day  = 24 * time.Hour
	week = 7 * day
)

// Draws is how many pages of each family, size and step are drawn, each
// from its own seed: one draw's luck moves a family's figures by a few
// events (zero-normal's false alarms read 11 and 16 on two).
const Draws = 3

// Pages is every generated page: each family at each size and step (the
// short bursts only at rows of 5 minutes: a row of 30 minutes has no
// 10-minute burst in it to find), Draws times.
func Pages() []Page {
	var out []Page
	for _, f := range Families {
		for _, step := range Steps {
			if f.MaxStep > 0 && step > f.MaxStep {
				continue
			}
			for _, size := range Sizes {
				for d := 1; d <= Draws; d++ {
					p := base(f.Name, size, step)
					p.Name = fmt.Sprintf("%s-%d", p.Name, d)
					f.Shape(&p)
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// base is a flat weekday rhythm on UTC clocks with modest noise, eight
// weeks long.
func base(family string, size float64, step time.Duration) Page {
	return Page{
		Family: family, Name: fmt.Sprintf("%s-%g-%s", family, size, step),
		Start: Start, Days: 56, Step: step,
		Peak: size, PeakHour: 14, Night: 0.15, Weekend: 0.7, FriSatNights: 1, Growth: 1,
		Clock: time.UTC, DayNoise: 0.08, HourNoise: 0.08,
	}
}

// Family is a kind of page and the events on it.
type Family struct {
	Name    string
	About   string
	MaxStep time.Duration // 0: any
	Shape   func(p *Page)
}

// Families are the classes of issue #23, three a real site adds, and
// city-nights, which puts the week's rhythm, clocks and drops together.
var Families = []Family{
	{Name: "weekend-nights", About: "Friday's and Saturday's nights at 4 × the weekdays'; a 3-hour surge at 5 ×", Shape: func(p *Page) {
		p.FriSatNights, p.Weekend, p.PeakHour = 4, 1, 20
		p.Events = []Event{{At: 5*week + 2*day + 11*hour, Len: 3 * hour, Factor: 5}}
	}},
	{Name: "quiet-weekends", About: "weekends at 30 %; a 3-hour surge at 5 × on a Sunday", Shape: func(p *Page) {
		p.Weekend = 0.3
		p.Events = []Event{{At: 5*week + 6*day + 13*hour, Len: 3 * hour, Factor: 5}}
	}},
	{Name: "drops", About: "a holiday at 25 % for a day; a storm at 10 % for two", Shape: func(p *Page) {
		p.Events = []Event{
			{At: 4*week + 3*day, Len: day, Factor: 0.25},
			{At: 6*week + 1*day + 6*hour, Len: 2 * day, Factor: 0.1},
		}
	}},
	{Name: "short-bursts", About: "10 minutes at 6 ×, twice", MaxStep: 5 * time.Minute, Shape: func(p *Page) {
		p.Events = []Event{
			{At: 3*week + 1*day + 15*hour, Len: 10 * time.Minute, Factor: 6},
			{At: 5*week + 4*day + 10*hour + 30*time.Minute, Len: 10 * time.Minute, Factor: 6},
		}
	}},
	{Name: "short-history", About: "4 days of rows; 2 hours at 5 × on the 2nd and on the 4th", Shape: func(p *Page) {
		p.Days = 4
		p.Events = []Event{
			{At: 1*day + 13*hour, Len: 2 * hour, Factor: 5},
			{At: 3*day + 12*hour, Len: 2 * hour, Factor: 5},
		}
	}},
	{Name: "second-weeks", About: "3 weeks of rows, weekends at 30 %; 3 hours at 4 × on the 2nd week's Wednesday and on the 3rd week's Thursday", Shape: func(p *Page) {
		p.Days, p.Weekend = 21, 0.3
		p.Events = []Event{
			{At: 1*week + 2*day + 14*hour, Len: 3 * hour, Factor: 4},
			{At: 2*week + 3*day + 11*hour, Len: 3 * hour, Factor: 4},
		}
	}},
	{Name: "daily-bursts", About: "a newsletter of 3 × the peak hour's views in 10 minutes every morning; 2 hours at 20 ×, then 6 hours at 4 ×", Shape: func(p *Page) {
		p.Bursts = []Burst{{First: 8 * hour, Every: day, Len: 10 * time.Minute, Views: 3 * p.Peak}}
		p.Events = []Event{
			{At: 3*week + 2*day + 16*hour, Len: 2 * hour, Factor: 20},
			{At: 5*week + 3*day + 10*hour, Len: 6 * hour, Factor: 4},
		}
	}},
	{Name: "zero-normal", About: "no views but bursts (100, or 3 × the size's peak hour) every 2 to 3 days; one burst of 10 × those", Shape: func(p *Page) {
		views := max(100, 3*p.Peak)
		p.Peak = 0.01
		p.Bursts = []Burst{{First: 9 * hour, Every: 2 * day, Jit: day, Len: 20 * time.Minute, Views: views}}
		p.Events = []Event{{At: 4*week + 2*day + 20*hour, Len: 20 * time.Minute, Factor: 1, Views: 10 * views}}
	}},
	{Name: "growth", About: "the level doubles in 8 weeks; 4 hours at 4 ×; a day at 30 %", Shape: func(p *Page) {
		p.Growth = 1.09
		p.Events = []Event{
			{At: 5*week + 1*day + 12*hour, Len: 4 * hour, Factor: 4},
			{At: 6*week + 3*day, Len: day, Factor: 0.3},
		}
	}},
	{Name: "local-clocks", About: "readers on New York's clocks, the rule on UTC across the change to summer time; 3 hours at 4 ×", Shape: func(p *Page) {
		p.Clock, _ = time.LoadLocation("America/New_York")
		p.PeakHour = 13
		p.Events = []Event{{At: 6*week + 2*day + 14*hour, Len: 3 * hour, Factor: 4}}
	}},
	{Name: "city-nights", About: "the week's rhythm, clocks and drops together: Friday's and Saturday's nights at 3 ×, New York's clocks, days that vary by 15 %; a holiday at 40 %, a storm at 15 % for a day and a half, a night at 2.5 × for 5 hours", Shape: func(p *Page) {
		p.FriSatNights, p.Weekend, p.PeakHour, p.Night = 3, 0.9, 18, 0.1
		p.Clock, _ = time.LoadLocation("America/New_York")
		p.DayNoise = 0.15
		p.Events = []Event{
			{At: 3*week + 3*day + 4*hour, Len: day, Factor: 0.4},
			{At: 5*week + 1*day + 10*hour, Len: 36 * hour, Factor: 0.15},
			{At: 6*week + 3*day + 23*hour, Len: 5 * hour, Factor: 2.5},
		}
	}},
	{Name: "rises", About: "the level rises 2.5 × for good on a Wednesday (its first 12 hours labelled); 3 hours at 3 × on top of it 6 and 13 days later (a third alike in 4 weeks would be the page's bursts: its normal)", Shape: func(p *Page) {
		p.Events = []Event{
			{At: 3*week + 2*day + 12*hour, Len: 8 * week, Factor: 2.5, Label: 12 * hour},
			{At: 4*week + 1*day + 11*hour, Len: 3 * hour, Factor: 3},
			{At: 5*week + 1*day + 14*hour, Len: 3 * hour, Factor: 3},
		}
	}},
	{Name: "uneven-days", About: "days that vary by 25 % and hours by 15 % beyond Poisson's noise; 6 hours at 3 ×", Shape: func(p *Page) {
		p.DayNoise, p.HourNoise = 0.25, 0.15
		p.Events = []Event{{At: 5*week + 3*day + 9*hour, Len: 6 * hour, Factor: 3}}
	}},
}
