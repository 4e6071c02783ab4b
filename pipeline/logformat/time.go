package logformat

import "time"

// parseTime parses Apache's %t without brackets, "17/May/2015:10:05:03 +0000",
// into a UTC time. It is done by hand because time.Parse is several times
// slower than the rest of the line put together; the layout is fixed by
// Apache and nginx ($time_local) and always uses English month names.
func parseTime(b []byte) (time.Time, bool) {
	if len(b) != 26 || b[2] != '/' || b[6] != '/' || b[11] != ':' ||
		b[14] != ':' || b[17] != ':' || b[20] != ' ' {
		return time.Time{}, false
	}
	day := num(b[0:2])
	mon := month(b[3:6])
	year := num(b[7:11])
	hour := num(b[12:14])
	min := num(b[15:17])
	sec := num(b[18:20])
	zh := num(b[22:24])
	zm := num(b[24:26])
	if mon == 0 || year < 1 || day < 1 || day > daysIn(mon, year) ||
		hour < 0 || hour > 23 || min < 0 || min > 59 || sec < 0 || sec > 59 ||
		zh < 0 || zh > 23 || zm < 0 || zm > 59 {
		return time.Time{}, false
	}
	zone := zh*3600 + zm*60
	switch b[21] {
	case '+':
	case '-':
		zone = -zone
	default:
		return time.Time{}, false
	}
	unix := daysSinceEpoch(year, mon, day)*86400 +
		int64(hour*3600+min*60+sec-zone)
	return time.Unix(unix, 0).UTC(), true
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

// month maps "Jan".."Dec" to 1..12, anything else to 0.
func month(b []byte) int {
	switch string(b) { // the compiler does not allocate for this conversion
	case "Jan":
		return 1
	case "Feb":
		return 2
	case "Mar":
		return 3
	case "Apr":
		return 4
	case "May":
		return 5
	case "Jun":
		return 6
	case "Jul":
		return 7
	case "Aug":
		return 8
	case "Sep":
		return 9
	case "Oct":
		return 10
	case "Nov":
		return 11
	case "Dec":
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
