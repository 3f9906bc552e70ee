// Package supervise starts the processes of a run so that every one of
// them, and every descendant of each, is known and ends with its task.
package supervise
