package launch

import "github.com/numasteal/numasteal/internal/oomscore"

// oomAdj is the launcher's OOM score adjustment. The command goes to the
// OOM killer before make and the daemon (package doc, step 5): the
// launcher raises its own adjustment to oomscore.Task before it forks or
// execs the command, which inherits it. A launcher that forked the
// command puts its own back once the command has started: it waits for
// the command and runs it again after an OOM kill, so it must not be the
// kernel's next choice when the killed command cannot be reaped at once.
type oomAdj struct {
	own    int  // the launcher's adjustment when it started
	raised bool // the launcher raised it (own was lower than Task)
	high   bool // it is at Task now
}

// raiseOOM raises the calling launcher's adjustment to oomscore.Task when
// it is lower. A failure costs only the choice of the victim.
func raiseOOM() *oomAdj {
	own, raised, err := oomscore.Raise(0, oomscore.Task)
	return &oomAdj{own: own, raised: raised && err == nil, high: raised && err == nil}
}

// beforeFork raises the adjustment again for another fork.
func (o *oomAdj) beforeFork() {
	if o != nil && o.raised && !o.high {
		o.high = oomscore.Set(0, oomscore.Task) == nil
	}
}

// afterFork puts the launcher's own adjustment back; the forked command
// keeps Task. Going back to its own value needs no privilege.
func (o *oomAdj) afterFork() {
	if o != nil && o.raised && o.high {
		o.high = oomscore.Set(0, o.own) != nil
	}
}
