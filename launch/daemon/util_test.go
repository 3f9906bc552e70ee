package daemon

import "strings"

func parseRSSString(s string) (*rssStore, error) { return parseRSS(strings.NewReader(s)) }
