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
