package replay

import "bailiff/audit"

// outputStatus is the result status an output stands for: another
// channel's error is a JSON-RPC error (there is no isError outside a
// tool result).
func outputStatus(o *Output) string {
	switch {
	case o.Error && o.Channel != "":
		return audit.StatusFailed
	case o.Error:
		return audit.StatusError
	}
	return audit.StatusOK
}
