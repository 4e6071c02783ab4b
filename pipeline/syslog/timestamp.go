package syslog

import "time"

// Timestamps are parsed by hand: time.Parse wants a string (an allocation
// per message) and time.FixedZone another for every offset seen.

// parseRFC3339 parses exactly b as YYYY-MM-DDThh:mm:ss[.frac](Z|±hh:mm),
// returning it in UTC. It also takes ±hhmm, which some senders write.
// A leap second (:60) is taken as :59, which time.Time cannot hold.
func parseRFC3339(b []byte) (time.Time, bool) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || (b[10] != 'T' && b[10] != 't') || b[13] != ':' || b[16] != ':' {
		return time.Time{}, false
	}
	year, mon, day := num(b[0:4]), num(b[5:7]), num(b[8:10])
	hh, mm, ss := num(b[11:13]), num(b[14:16]), num(b[17:19])
	if year < 0 || mon < 1 || mon > 12 || day < 1 || day > daysIn(mon, year) ||
		hh < 0 || hh > 23 || mm < 0 || mm > 59 || ss < 0 || ss > 60 {
		return time.Time{}, false
	}
	ss = min(ss, 59)
	i := 19
	ns := 0
	if b[i] == '.' {
		i++
		start := i
		for i < len(b) && isDigit(b[i]) && i-start < 9 {
			ns = ns*10 + int(b[i]-'0')
			i++
		}
		if i == start {
			return time.Time{}, false
		}
		for k := i - start; k < 9; k++ {
			ns *= 10
		}
	}
	if i >= len(b) {
		return time.Time{}, false
	}
	off := 0
	switch b[i] {
	case 'Z', 'z':
		i++
	case '+', '-':
		z := b[i+1:]
		var oh, om int
		switch {
		case len(z) == 5 && z[2] == ':':
			oh, om = num(z[0:2]), num(z[3:5])
		case len(z) == 4:
			oh, om = num(z[0:2]), num(z[2:4])
		default:
			return time.Time{}, false
		}
		if oh < 0 || oh > 23 || om < 0 || om > 59 {
			return time.Time{}, false
		}
		off = (oh*60 + om) * 60
		if b[i] == '-' {
			off = -off
		}
		i = len(b)
	default:
		return time.Time{}, false
	}
	if i != len(b) {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(mon), day, hh, mm, ss, ns, time.UTC)
	return t.Add(-time.Duration(off) * time.Second), true
}

var months = [12]string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}

// monthAt returns the month (1..12) whose abbreviation, in any case and
// followed by a space, starts b[i:]; 0 if none does.
func monthAt(b []byte, i int) int {
	if len(b)-i < 4 || b[i+3] != ' ' {
		return 0
	}
	c0, c1, c2 := b[i]|0x20, b[i+1]|0x20, b[i+2]|0x20
	for k, m := range months {
		if c0 == m[0] && c1 == m[1] && c2 == m[2] {
			return k + 1
		}
	}
	return 0
}

// parseBSDTime parses "Mmm dd hh:mm:ss" at the start of b, with the day
// padded by a space (as nginx and syslog(3) write it) or a zero, or not at
// all; fractional seconds are taken too. It returns the time in UTC and
// the bytes used.
func parseBSDTime(b []byte, loc *time.Location, received time.Time) (time.Time, int, bool) {
	mon := monthAt(b, 0)
	if mon == 0 {
		return time.Time{}, 0, false
	}
	i := 4
	if i < len(b) && b[i] == ' ' {
		i++
	}
	day := 0
	for start := i; i < len(b) && isDigit(b[i]) && i-start < 2; i++ {
		day = day*10 + int(b[i]-'0')
	}
	if len(b) < i+9 || b[i] != ' ' || b[i+3] != ':' || b[i+6] != ':' {
		return time.Time{}, 0, false
	}
	hh, mm, ss := num(b[i+1:i+3]), num(b[i+4:i+6]), num(b[i+7:i+9])
	if day < 1 || day > daysIn(mon, 2000) || hh < 0 || hh > 23 || mm < 0 || mm > 59 || ss < 0 || ss > 60 {
		return time.Time{}, 0, false
	}
	ss = min(ss, 59)
	i += 9
	ns := 0
	if i+1 < len(b) && b[i] == '.' && isDigit(b[i+1]) {
		i++
		start := i
		for ; i < len(b) && isDigit(b[i]); i++ {
			if i-start < 9 {
				ns = ns*10 + int(b[i]-'0')
			}
		}
		for k := i - start; k < 9; k++ {
			ns *= 10
		}
	}
	if received.IsZero() {
		received = time.Now()
	}
	ref := received.In(loc)
	// No year is sent. Messages arrive late, rarely early (a sender's clock
	// ahead), so take the year that puts the time within a week after
	// arrival or a year less a week before it: December messages read in
	// January land in the old year, and early ones at New Year in the new.
	year := ref.Year()
	t := time.Date(year, time.Month(mon), day, hh, mm, ss, ns, loc)
	const week = 7 * 24 * time.Hour
	if d := t.Sub(ref); d > week {
		year--
	} else if d < week-365*24*time.Hour {
		year++
	}
	if day > daysIn(mon, year) {
		return time.Time{}, 0, false // 29 Feb in a year without one
	}
	if year != ref.Year() {
		t = time.Date(year, time.Month(mon), day, hh, mm, ss, ns, loc)
	}
	return t.UTC(), i, true
}

func (p *Parser) parseBSDTime(b []byte, received time.Time) (time.Time, int, bool) {
	return parseBSDTime(b, p.location(), received)
}

// num parses 1..4 ASCII digits; -1 if any byte is not a digit.
func num(b []byte) int {
	n := 0
	for _, c := range b {
		if !isDigit(c) {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func daysIn(mon, year int) int {
	switch mon {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
