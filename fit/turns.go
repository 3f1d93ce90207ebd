package fit

import "github.com/detourhq/detour/llm"

// userIndexes returns the indexes of the user messages of ms: where each
// turn starts.
func userIndexes(ms []entry) []int {
	var us []int
	for i := range ms {
		if ms[i].m.Role == llm.RoleUser {
			us = append(us, i)
		}
	}
	return us
}

// splitCuts reports, for each index c of ms, whether keeping ms[c:] would
// split a tool call from its results: some call id is named both before
// c and at or after it (by an assistant's ToolCalls and a tool message's
// ToolCallID). A tool message whose id names no call, or no id, belongs
// to the last message with tool calls before it.
func splitCuts(ms []entry) []bool {
	calls := map[string]bool{}
	for i := range ms {
		for _, c := range ms[i].m.ToolCalls {
			if c.ID != "" {
				calls[c.ID] = true
			}
		}
	}
	first, last := map[string]int{}, map[string]int{}
	name := func(id string, i int) {
		if _, ok := first[id]; !ok {
			first[id] = i
		}
		last[id] = i
	}
	diff := make([]int, len(ms)+2)
	span := func(lo, hi int) { // cuts in (lo, hi] split
		if lo < hi {
			diff[lo+1]++
			diff[hi+1]--
		}
	}
	caller := -1
	for i := range ms {
		m := &ms[i].m
		for _, c := range m.ToolCalls {
			if c.ID != "" {
				name(c.ID, i)
			}
		}
		if m.Role == llm.RoleTool {
			if calls[m.ToolCallID] {
				name(m.ToolCallID, i)
			} else if caller >= 0 {
				span(caller, i)
			}
		}
		if len(m.ToolCalls) > 0 {
			caller = i
		}
	}
	for id, lo := range first {
		span(lo, last[id])
	}
	blocked := make([]bool, len(ms))
	run := 0
	for c := range ms {
		run += diff[c]
		blocked[c] = run > 0
	}
	return blocked
}
