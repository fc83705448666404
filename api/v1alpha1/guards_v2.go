package v1alpha1

// mergeV2 merges the guards SPEC.md's v2 added ("Beyond the seeds").
func mergeV2(out, o *Guards) {
	if o.CycleRepeats != nil {
		out.CycleRepeats = o.CycleRepeats
	}
	if o.ErrorRepeats != nil {
		out.ErrorRepeats = o.ErrorRepeats
	}
	if o.RepeatedTextBytes != nil {
		out.RepeatedTextBytes = o.RepeatedTextBytes
	}
	if o.AnswerAware != nil {
		out.AnswerAware = o.AnswerAware
	}
}
