package v1alpha1

// SecondsPattern is the syntax of a duration bounded under a minute (a
// guard's refuseWait): Go duration syntax in seconds at most, so that its
// rule can compare it with duration(). hack/apitables writes it into that
// guard's marker.
const SecondsPattern = `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s))+$`

// CostPattern is the syntax of an amount in USD (a guard's maxCostUSD, its
// limit, a budget's maxCostUSD): a decimal string of at most 9 digits
// before the point and 9 after, which CEL's quantity() compares exactly.
// hack/apitables writes it into the guards' markers; Budget's repeats it
// (a marker cannot name a constant).
const CostPattern = `^[0-9]{1,9}(\.[0-9]{1,9})?$`

// The bounds of the guards' values that their markers hold (hack/apitables
// writes them) and the chart's schema repeats (hack/chartguards writes it):
// a duration's string, one in seconds at most, and worldTools.
const (
	DurationMaxLength = 32
	SecondsMaxLength  = 16
	MaxWorldTools     = 64
	MaxToolNameLength = 256
)
