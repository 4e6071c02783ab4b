package sweep

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Series exported from anywhere read alike: a spreadsheet's byte order
// mark, a dashboard's tabs and column names, a European semicolon, a
// label column beside the count, columns in another order, Unix seconds
// or milliseconds, offsets without a colon, fractions of a second.
func TestReadCountsAsExportsWriteThem(t *testing.T) {
	at := func(h, m int) time.Time { return time.Date(2015, 2, 26, h, m, 0, 0, time.UTC) }
	want := fmt.Sprint([]countRow{
		{site: "pricing", path: "/", minute: at(21, 40), hits: 104},
		{site: "pricing", path: "/", minute: at(21, 45), hits: 0},
		{site: "pricing", path: "/", minute: at(21, 50), hits: 7},
	})
	for _, tc := range []struct{ name, csv string }{
		{"nab", "timestamp,value\n2015-02-26 21:40:00,104\n2015-02-26 21:45:00,0\n2015-02-26 21:50:00,7\n"},
		{"bom", "\ufefftimestamp,value\r\n2015-02-26 21:40:00,104\r\n2015-02-26 21:45:00,0\r\n2015-02-26 21:50:00,7\r\n"},
		{"dashboard tabs", "Time\tpricing views\n2015-02-26T21:40:00Z\t104\n2015-02-26T21:45:00Z\t0\n2015-02-26T21:50:00Z\t7\n"},
		{"semicolons", "Date;Count\n2015-02-26 21:40;104\n2015-02-26 21:45;0\n2015-02-26 21:50;7\n"},
		{"a label column", "timestamp,value,label\n2015-02-26 21:40:00,104,1\n2015-02-26 21:45:00,0,0\n2015-02-26 21:50:00,7,0\n"},
		{"columns reordered", "views,ts,note\n104,2015-02-26 21:40:00,a\n0,2015-02-26 21:45:00,b\n7,2015-02-26 21:50:00,c\n"},
		{"unix seconds", "1424986800,104\n1424987100,0\n1424987400.5,7\n"},
		{"unix milliseconds", "ts,hits\n1424986800000,104\n1424987100000,0\n1424987400000,7\n"},
		{"a date and a time of day", "Date,Time,Value\n2015-02-26,21:40:00,104\n2015-02-26,21:45:00,0\n2015-02-26,21:50,7\n"},
		{"two columns, any names", "Time,pricing views\n2015-02-26T21:40:00Z,104\n2015-02-26T21:45:00Z,0\n2015-02-26T21:50:00Z,7\n"},
		{"spaces after semicolons", "Date; Count\n2015-02-26 21:40; 104\n2015-02-26 21:45; 0\n2015-02-26 21:50; 7\n"},
		{"an analytics export", "# Pageviews by minute\n# site: pricing\nts,Pageviews\n201502262140,104\n201502262145,0\n201502262150,7\nTotal,111\n"},
		{"offsets", "timestamp,value\n2015-02-26 22:40:00+01:00,104\n2015-02-26T21:45:00.000+0000,0\n2015-02-26 16:50:00-0500,7\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cf, err := ReadCounts(strings.NewReader(tc.csv), "exports/pricing.csv")
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(cf.rows); got != want {
				t.Errorf("rows %s, want %s", got, want)
			}
		})
	}
}

// A header names the site and path columns too, in any order.
func TestReadCountsFindsSiteAndPathByName(t *testing.T) {
	cf, err := ReadCounts(strings.NewReader("page,host,views,time\n/a,x.example,3,2026-03-02T00:00:00Z\n/b,y.example,4,2026-03-02T00:01:00Z\n"), "c.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint([]countRow{
		{site: "x.example", path: "/a", minute: time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), hits: 3},
		{site: "y.example", path: "/b", minute: time.Date(2026, 3, 2, 0, 1, 0, 0, time.UTC), hits: 4},
	})
	if got := fmt.Sprint(cf.rows); got != want {
		t.Errorf("rows %s, want %s", got, want)
	}
}

// A row without a count is a hole in the data, as a row left out is,
// not a count of 0 (which says the data covers that time); the file
// says how many there were and where the first was.
func TestReadCountsReadsAMissingCountAsAHole(t *testing.T) {
	cf, err := ReadCounts(strings.NewReader("timestamp,value\n2015-02-26 21:40:00,104\n2015-02-26 21:45:00,\n2015-02-26 21:50:00,NaN\n2015-02-26 21:55:00,null\n2015-02-26 22:00:00,0\n"), "c.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(cf.rows) != 2 || cf.rows[1].hits != 0 || cf.Missing != 3 || cf.MissingLine != 3 {
		t.Errorf("rows %v, %d missing from line %d; want 2 rows, 3 missing from line 3", cf.rows, cf.Missing, cf.MissingLine)
	}
	if _, err := ReadCounts(strings.NewReader("timestamp,value\n2015-02-26 21:45:00,\n"), "c.csv"); err == nil || !strings.Contains(err.Error(), "c.csv: no counts") {
		t.Errorf("a file of holes: %v, want no counts", err)
	}
}

// What analytics exports write besides: a date and an hour of the day
// in columns of their own, a date and hour as one number, counts with
// thousands separators; and what they cannot give, counts per day,
// refused with what to export instead.
func TestReadCountsOfAnalyticsExports(t *testing.T) {
	cf, err := ReadCounts(strings.NewReader("Date,Hour,Page Views\n2025-03-03,9,\"1,190\"\n2025-03-03,10,\"2,004\"\n"), "ga.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint([]countRow{
		{site: "ga", path: "/", minute: time.Date(2025, 3, 3, 9, 0, 0, 0, time.UTC), hits: 1190},
		{site: "ga", path: "/", minute: time.Date(2025, 3, 3, 10, 0, 0, 0, time.UTC), hits: 2004},
	})
	if got := fmt.Sprint(cf.rows); got != want {
		t.Errorf("date and hour columns: rows %s, want %s", got, want)
	}
	if step := cf.RowStep(); step != time.Hour {
		t.Errorf("rows every %s, want 1h", step)
	}
	var sparse strings.Builder
	sparse.WriteString("timestamp,value\n")
	for i := range 60 { // a visit of two minutes' views every 4 hours: gaps of a minute and of hours
		at := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * 4 * time.Hour)
		fmt.Fprintf(&sparse, "%s,1\n%s,2\n", at.Format(time.RFC3339), at.Add(time.Minute).Format(time.RFC3339))
	}
	if cf, err := ReadCounts(strings.NewReader(sparse.String()), "s.csv"); err != nil || cf.RowStep() > time.Hour {
		t.Errorf("a sparse page of minutes: step %v (%v), want under its rules' window", cf.RowStep(), err)
	}
	cf, err = ReadCounts(strings.NewReader("Date Hour,Pageviews\n2025030314,119\n"), "ga.csv")
	if err != nil || len(cf.rows) != 1 || !cf.rows[0].minute.Equal(time.Date(2025, 3, 3, 14, 0, 0, 0, time.UTC)) {
		t.Errorf("a date and hour as one number: %v %v, want 2025-03-03 14:00, not a Unix time", cf, err)
	}
	cf, err = ReadCounts(strings.NewReader("# Pages and screens\n# Start date: 20250303\n\nDate,Hour,Views\n\"20250303\",\"14\",\"119\"\n"), "ga4.csv")
	if err != nil || len(cf.rows) != 1 || !cf.rows[0].minute.Equal(time.Date(2025, 3, 3, 14, 0, 0, 0, time.UTC)) {
		t.Errorf("a compact date and an hour: %v %v, want 2025-03-03 14:00", cf, err)
	}
	if _, err := ReadCounts(strings.NewReader("time,/a,/b\n2025-03-03T00:00:00Z,1,2\n"), "wide.csv"); err == nil || !strings.Contains(err.Error(), "wide.csv:1: header: a column per page is not read; write a row per page and time") {
		t.Errorf("a column per page: %v, want what to write instead", err)
	}
	if _, err := ReadCounts(strings.NewReader("date,pageviews\n2025-03-03,10919\n"), "daily.csv"); err == nil || !strings.Contains(err.Error(), "daily.csv:2: timestamp: a date without a time of day: export views per hour or finer") {
		t.Errorf("counts per day: %v, want what to export instead", err)
	}
}

// Rows at the time of an earlier row of the same page are added to it,
// and counted so the backtest says so: a file concatenated twice, or a
// column of several series read as one page.
func TestReadCountsCountsRepeatedTimes(t *testing.T) {
	cf, err := ReadCounts(strings.NewReader("Series,Time,Value\n/a,2026-03-02T00:00:00Z,3\n/b,2026-03-02T00:00:00Z,4\n/a,2026-03-02T00:00:30Z,1\n"), "c.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(cf.rows) != 1 || cf.rows[0].hits != 8 || cf.Repeated != 1 || cf.RepeatedLine != 3 {
		t.Errorf("rows %v, %d repeated from line %d; want one row of 8, 1 repeated at line 3 (the row at :30 is the same minute, not a repeat)", cf.rows, cf.Repeated, cf.RepeatedLine)
	}
}
