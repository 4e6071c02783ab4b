package classify_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/pipeline/classify"
	"github.com/pagewatch/pagewatch/pipeline/logformat"
)

func Example() {
	c, err := classify.New(classify.DefaultExtra())
	if err != nil {
		fmt.Println(err)
		return
	}
	// One cache per goroutine; the classifier is shared.
	cache := c.NewCache(0)
	for _, ua := range []string{
		"Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
		"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot",
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.2; +https://openai.com/gptbot",
		"-",
	} {
		fmt.Println(cache.Class([]byte(ua)))
	}
	// Output:
	// human
	// bot
	// ai_agent
	// ai_crawler
	// unknown
}

func ExampleReport() {
	c, _ := classify.New(classify.DefaultExtra())
	rep := classify.NewReport(c)
	rep.Top = 2
	rep.Counts = func(cl hit.Class) bool { return cl != hit.ClassBot && cl != hit.ClassAICrawler }
	log := strings.Join([]string{
		`1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 5 "-" "Mozilla/5.0 (X11; Linux x86_64) Firefox/125.0"`,
		`1.2.3.4 - - [17/May/2015:10:05:04 +0000] "GET /a HTTP/1.1" 200 5 "-" "Mozilla/5.0 (X11; Linux x86_64) Firefox/125.0"`,
		`5.6.7.8 - - [17/May/2015:10:05:05 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"`,
		`5.6.7.8 - - [17/May/2015:10:05:06 +0000] "GET /feed HTTP/1.1" 200 5 "-" "FeedBurner/1.0 (http://www.FeedBurner.com)"`,
		`not a log line`,
	}, "\n")
	if err := rep.AddLog(strings.NewReader(log), logformat.ParserFunc(logformat.Parse)); err != nil {
		fmt.Println(err)
		return
	}
	if err := rep.Write(os.Stdout); err != nil {
		fmt.Println(err)
	}
	// Output:
	//    lines   share  class
	//        0    0.0%  unknown (counted)
	//        2   40.0%  human (counted)
	//        2   40.0%  bot (not counted)
	//        0    0.0%  ai_agent (counted)
	//        0    0.0%  ai_crawler (not counted)
	//        1   20.0%  (malformed lines)
	//        5          (all lines)
	//
	// human: 1 user agents
	//        2  Mozilla/5.0 (X11; Linux x86_64) Firefox/125.0
	//
	// bot: 2 user agents
	//        1  FeedBurner/1.0 (http://www.FeedBurner.com)
	//        1  curl/8.5.0
}
