package logformat

import (
	"encoding/binary"
	"sync/atomic"
	"time"
)

// parseTime parses Apache's %t without brackets, "17/May/2015:10:05:03 +0000",
// into a UTC time. It is done by hand because time.Parse is several times
// slower than the rest of the line put together; the layout is fixed by
// Apache and nginx ($time_local) and always uses English month names.
func parseTime(b []byte) (time.Time, bool) {
	if len(b) != 26 {
		return time.Time{}, false
	}
	sec, ok := clock(b)
	if !ok {
		return time.Time{}, false
	}
	base, ok := dayStart(b)
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(base+int64(sec), 0).UTC(), true
}

// clock parses the time of day of a 26-byte %t time, "10:05:03" at b[12:20],
// into seconds since midnight.
func clock(b []byte) (int, bool) {
	_ = b[25]
	if b[14] != ':' || b[17] != ':' {
		return 0, false
	}
	hour, minute, sec := num2(b[12], b[13]), num2(b[15], b[16]), num2(b[18], b[19])
	// A bad digit gives -1, which as a uint is out of every range.
	if uint(hour) > 23 || uint(minute) > 59 || uint(sec) > 59 {
		return 0, false
	}
	return hour*3600 + minute*60 + sec, true
}

// dayStart returns the Unix time of the midnight starting the day of a
// 26-byte %t time, in its own zone: everything of b but its time of day.
func dayStart(b []byte) (int64, bool) {
	_ = b[25]
	if b[2] != '/' || b[6] != '/' || b[11] != ':' || b[20] != ' ' {
		return 0, false
	}
	day, mon := num2(b[0], b[1]), month(b[3:6])
	y1, y2 := num2(b[7], b[8]), num2(b[9], b[10])
	zh, zm := num2(b[22], b[23]), num2(b[24], b[25])
	if y1 < 0 || y2 < 0 || uint(zh) > 23 || uint(zm) > 59 {
		return 0, false
	}
	year := y1*100 + y2
	if mon == 0 || year < 1 || day < 1 || day > daysIn(mon, year) {
		return 0, false
	}
	zone := int64(zh*3600 + zm*60)
	switch b[21] {
	case '+':
	case '-':
		zone = -zone
	default:
		return 0, false
	}
	return daysSinceEpoch(year, mon, day)*86400 - zone, true
}

// timeCache remembers the day of the last %t time a parser saw, so that the
// next line of the same day (nearly all of them: logs are written in time
// order) only parses its time of day. Compiled parsers may be shared by
// goroutines, so it is a seqlock of atomics: readers never write, and a
// writer that loses a race simply does not cache. The zero value is empty.
type timeCache struct {
	seq        atomic.Uint64 // odd while being written; 0 while empty
	k0, k1, k2 atomic.Uint64 // the day's bytes, as loaded by dayKey
	base       atomic.Int64  // dayStart of that day
}

// dayKey packs every byte of a 26-byte %t time that dayStart reads into
// three words: b[0:12] (with an overlap) and b[20:26]. Equal keys mean
// equal days, so a hit needs no other check of those bytes.
func dayKey(b []byte) (k0, k1, k2 uint64) {
	_ = b[25]
	return le64(b[0:8]), le64(b[4:12]), le64(b[18:26]) >> 16 // drop the seconds, b[18:20]
}

// parse is parseTime with the cache.
func (c *timeCache) parse(b []byte) (time.Time, bool) {
	if len(b) != 26 {
		return time.Time{}, false
	}
	sec, ok := clock(b)
	if !ok {
		return time.Time{}, false
	}
	k0, k1, k2 := dayKey(b)
	s := c.seq.Load()
	if s != 0 && s&1 == 0 && c.k0.Load() == k0 && c.k1.Load() == k1 && c.k2.Load() == k2 {
		base := c.base.Load()
		if c.seq.Load() == s { // no writer changed the entry meanwhile
			return time.Unix(base+int64(sec), 0).UTC(), true
		}
	}
	base, ok := dayStart(b)
	if !ok {
		return time.Time{}, false
	}
	if s&1 == 0 && c.seq.CompareAndSwap(s, s+1) {
		c.k0.Store(k0)
		c.k1.Store(k1)
		c.k2.Store(k2)
		c.base.Store(base)
		c.seq.Store(s + 2)
	}
	return time.Unix(base+int64(sec), 0).UTC(), true
}

// le32 and le64 load bytes as a word, to compare or test several at once.
func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }
func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

// num2 parses two ASCII digits; -1 if either is not a digit.
func num2(a, b byte) int {
	x, y := int(a)-'0', int(b)-'0'
	if uint(x) > 9 || uint(y) > 9 {
		return -1
	}
	return x*10 + y
}

// num parses a short run of ASCII digits; -1 if any byte is not a digit.
func num(b []byte) int {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// month maps "Jan".."Dec" to 1..12, anything else to 0. Switching on the
// three bytes as one integer takes a few compares where a switch on the
// string compares strings.
func month(b []byte) int {
	_ = b[2]
	switch uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]) {
	case 'J'<<16 | 'a'<<8 | 'n':
		return 1
	case 'F'<<16 | 'e'<<8 | 'b':
		return 2
	case 'M'<<16 | 'a'<<8 | 'r':
		return 3
	case 'A'<<16 | 'p'<<8 | 'r':
		return 4
	case 'M'<<16 | 'a'<<8 | 'y':
		return 5
	case 'J'<<16 | 'u'<<8 | 'n':
		return 6
	case 'J'<<16 | 'u'<<8 | 'l':
		return 7
	case 'A'<<16 | 'u'<<8 | 'g':
		return 8
	case 'S'<<16 | 'e'<<8 | 'p':
		return 9
	case 'O'<<16 | 'c'<<8 | 't':
		return 10
	case 'N'<<16 | 'o'<<8 | 'v':
		return 11
	case 'D'<<16 | 'e'<<8 | 'c':
		return 12
	}
	return 0
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

// daysSinceEpoch counts days from 1970-01-01 to the given proleptic
// Gregorian date (Howard Hinnant's days_from_civil, for years >= 1).
func daysSinceEpoch(year, mon, day int) int64 {
	y := int64(year)
	if mon <= 2 {
		y-- // count March-based years so the leap day falls at the end
	}
	era := y / 400
	yoe := y - era*400
	m := int64(mon)
	if m > 2 {
		m -= 3
	} else {
		m += 9
	}
	doy := (153*m+2)/5 + int64(day) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}
