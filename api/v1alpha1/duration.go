package v1alpha1

// DurationPattern is the syntax of every duration field of the API (a
// guard's stallTimeout and toolTimeout, their limits, a budget's window):
// Go duration syntax, at most 4 numbers of at most 5 digits before the
// point, each with its unit. Go's time.ParseDuration and CEL's duration()
// fail past 2562047h (int64 nanoseconds); the largest value this admits,
// four times 99999.99...h, is under 400000h, so every duration admitted is
// one the admission policies can read. A CEL rule could not refuse an
// unreadable duration by itself: duration() errors on it, and the limits
// policies fail open (docs/policies.md#limits). hack/apitables writes it
// into the guards' and limits' markers; Budget.Window's marker repeats it
// (a marker cannot name a constant), and TestDurationFieldsPattern ties
// every duration field of the CRDs to it.
const DurationPattern = `^([0-9]{1,5}(\.[0-9]+)?(ns|us|µs|ms|s|m|h)){1,4}$`
