package bus

// Internals the external tests check against.
const (
	RetryBudget = retryBudget
	RetryWait   = retryWait
)
