package tensor

// Kernel entry points. They are variables only so that an accelerated
// implementation can be chosen once at start-up; each is a pure function
// with a fixed reduction order.
var (
	dotF32 = dotF32Generic
	dotQ8  = dotQ8Generic
	dotQ4  = dotQ4Generic
)
