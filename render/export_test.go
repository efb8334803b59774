package render

// OnRead sets a hook every read of fsys that passes the context check calls.
func OnRead(fsys *ConfinedFS, f func(string)) { fsys.onRead = f }
