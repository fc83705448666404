package main

import (
	"fmt"
	"strings"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/monitor"
)

// guardDoc is the godoc of a guard's field of Guards (and so its CRD
// description): whose guard it is, its Help line, its syntax and its
// cluster default. d is the detector that reads it; nil for a setting.
func guardDoc(gd monitor.Guard, d *monitor.Detector) string {
	var b strings.Builder
	switch {
	case d == nil:
		fmt.Fprintf(&b, "%s is a setting of the detectors.", goName(gd.Name))
	case d.Nudges():
		fmt.Fprintf(&b, "%s is a guard of the %s detector, which nudges.", goName(gd.Name), d.Name)
	default:
		fmt.Fprintf(&b, "%s is a guard of the %s detector (class %s).", goName(gd.Name), d.Name, d.Class)
	}
	for _, s := range []string{gd.Help, syntaxDoc(gd), defaultDoc(gd, d != nil)} {
		if s != "" {
			b.WriteString(" " + s)
		}
	}
	return b.String()
}

// syntaxDoc says how a guard's value is written, where its kind has more
// to say than its type.
func syntaxDoc(gd monitor.Guard) string {
	switch gd.Kind {
	case monitor.GuardDuration:
		s := `In Go duration syntax ("1h30m"), at most 4 numbers of at most 5 digits before the point, each with its unit, so that every value admitted is one the admission policies can read.`
		if inSeconds(gd) {
			s = `In Go duration syntax in seconds at most ("1.5s").`
		}
		return s
	case monitor.GuardChoice:
		return "One of " + quoted(gd.Choices) + "."
	case monitor.GuardCost:
		return `A decimal string ("5.00") of at most 9 digits before the point and 9 after.`
	case monitor.GuardTools:
		return fmt.Sprintf("At most %d names of at most %d bytes.", twv1.MaxWorldTools, twv1.MaxToolNameLength)
	}
	return ""
}

// defaultDoc says a guard's cluster default (the manager's, unless its
// config file sets another), and for a detector's guard which value
// switches it off.
func defaultDoc(gd monitor.Guard, detector bool) string {
	v, ok := gd.Default()
	if !ok {
		return "No cluster default."
	}
	var s string
	switch v := v.(type) {
	case monitor.Duration:
		s = fmt.Sprintf("Cluster default %q", v.Short())
	case string:
		s = fmt.Sprintf("Cluster default %q", v)
	default:
		s = fmt.Sprintf("Cluster default %v", v)
	}
	switch {
	case !detector:
	case gd.Kind == monitor.GuardCount && v == 0:
		return s + " (off)."
	case gd.Kind == monitor.GuardCount:
		return s + "; 0 switches it off."
	case gd.Kind == monitor.GuardDuration:
		return s + `; "0s" switches it off.`
	}
	return s + "."
}

// limitDoc is the godoc of a guard's field of GuardLimits.
func limitDoc(gd monitor.Guard) string {
	name := goName(gd.Name)
	switch gd.Kind {
	case monitor.GuardDuration:
		return fmt.Sprintf("%s is the longest %s a run may ask, in Go duration syntax.", name, gd.Name)
	case monitor.GuardCost:
		return fmt.Sprintf("%s is the largest %s a run may ask, a decimal string; a run that asks none is capped at it.", name, gd.Name)
	}
	return fmt.Sprintf("%s is the largest %s a run may ask.", name, gd.Name)
}

// quoted lists strings as Go quotes them: "none", "file".
func quoted(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
