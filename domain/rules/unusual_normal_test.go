package rules

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// nbQuantile is the least count whose negative binomial (mean mu,
// variance mu + phi mu²) CDF reaches p, summed from the pmf.
func nbQuantile(mu, phi, p float64) float64 {
	r := 1 / phi
	q := r / (r + mu)
	lr, _ := math.Lgamma(r)
	cdf := 0.0
	for k := 0.0; ; k++ {
		lk, _ := math.Lgamma(k + r)
		lf, _ := math.Lgamma(k + 1)
		cdf += math.Exp(lk - lr - lf + r*math.Log(q) + k*math.Log1p(-q))
		if cdf >= p {
			return k
		}
	}
}

// The count 5 noise units below the normal is where the negative
// binomial puts it, on a small page and a large one whose days vary:
// within a tenth of the exact quantile at the normal distribution's
// 5 σ tail. The square root's lower tail, mirrored from its upper one,
// put a large page's far below it.
func TestLowerTailIsTheNegativeBinomials(t *testing.T) {
	var d unusualDetector
	p := 0.5 * math.Erfc(5/math.Sqrt2) // Φ(-5)
	for _, c := range []struct{ mu, phi float64 }{{50, 0.01}, {200, 0.02}, {2000, 0.04}, {2000, 0.1}, {20000, 0.02}} {
		e := Expected{Dispersion: c.phi, Samples: 1 << 30} // a normal known exactly: the count's noise alone
		got, exact := d.countAt(e, c.mu, -5), nbQuantile(c.mu, c.phi, p)
		if math.Abs(got-exact) > 0.1*exact+2 {
			t.Errorf("mu %g, phi %g: 5 units down is %.0f, the negative binomial's quantile %.0f", c.mu, c.phi, got, exact)
		}
		r := math.Sqrt(c.mu+0.375) - 5*noise(e, c.mu)/2
		t.Logf("mu %g, phi %g: %.0f (%.2f × mu), exact %.0f; the square root's %.0f; up: the square root's %.2f × mu, exact %.2f ×",
			c.mu, c.phi, got, got/c.mu, exact, r*r-0.375, d.countAt(e, c.mu, 5)/c.mu, nbQuantile(c.mu, c.phi, 1-p)/c.mu)
		if z := NoiseZ(e, c.mu, uint64(math.Round(got))); math.Abs(z+5) > 0.1 {
			t.Errorf("mu %g, phi %g: NoiseZ of its own 5 units down is %.2f", c.mu, c.phi, z)
		}
	}
}

// A page's overdispersion read from a few samples is right on average:
// 1.4826 × the MAD of 4 samples, squared, is 0.72 of their variance on
// average, and read so, a page whose hours vary by 20 % (φ 0.04) was
// read as one of 0.033 (with the prior), its ordinary hours more noise
// units from the normal than they are.
func TestDispersionFromFewSamplesIsUnbiased(t *testing.T) {
	var d unusualDetector
	const mu, phi, draws = 10000.0, phiPrior, 40000 // the prior's own φ: its pull moves nothing
	sd := math.Sqrt(mu + phi*mu*mu)
	rng := rand.New(rand.NewPCG(7, 11))
	for _, c := range []struct {
		n      int
		weekly bool
	}{{3, true}, {4, true}, {6, false}} {
		sum := 0.0
		for range draws {
			var h hourSamples
			for k := 1; k <= c.n; k++ {
				back := k
				if c.weekly {
					back = 7 * k
				}
				h.add(back, uint64(math.Max(0, math.Round(mu+sd*rng.NormFloat64()))), false)
			}
			sum += d.expectHour(&h).Dispersion
		}
		if got := sum / draws; math.Abs(got-phi) > 0.06*phi {
			t.Errorf("%d samples: φ read %.4f on average, want %.2f", c.n, got, phi)
		}
	}
}

// The examples of significance, on a steady page whose 4 weekly
// samples and 6 days of the hour are alike (docs/unusual-rules.md says
// these figures): 70 views against 20 is news, 7 against 2 is not, and
// a page of 50,000 views an hour needs a smaller ratio than one of 50.
func TestUnusualSignificanceIsOfCounts(t *testing.T) {
	r := unusualRule(t, Unusual{})
	start := monday
	at := start.Add(40*24*time.Hour + 14*time.Hour + 10*time.Minute)
	steady := func(mu uint64) Expected {
		spans := r.BaselineSpans(at, start)
		counts := make([]uint64, len(spans))
		for i, sp := range spans {
			counts[i] = uint64(float64(mu) * float64(sp.To.Sub(sp.From)) / float64(time.Hour))
		}
		return r.Normal(spans, counts, Trend{})
	}
	fires := func(mu, count uint64) bool {
		_, f := r.StepEpisode(State{}, Observation{At: at, Count: count, Short: count / 6, Expected: steady(mu)})
		return len(f) > 0
	}
	for _, tc := range []struct {
		mu, count uint64
		z         float64 // noise units above the normal, to a tenth
		fires     bool
	}{
		{20, 70, 5.8, true},
		{2, 7, 2.0, false},
	} {
		e := steady(tc.mu)
		if z := NoiseZ(e, e.Value, tc.count); math.Abs(z-tc.z) > 0.05 || fires(tc.mu, tc.count) != tc.fires {
			t.Errorf("%d views against %d: %.2f noise units, fires %v; want %.1f, %v", tc.count, tc.mu, z, fires(tc.mu, tc.count), tc.z, tc.fires)
		}
	}
	from := func(mu uint64) float64 { // the least multiple of mu that fires
		for c := mu; c < 10*mu; c += max(1, mu/1000) {
			if fires(mu, c) {
				return float64(c) / float64(mu)
			}
		}
		return math.Inf(1)
	}
	if big, small := from(50000), from(50); math.Abs(big-1.8) > 0.05 || math.Abs(small-2.4) > 0.05 {
		t.Errorf("a page of 50,000 an hour fires from %.2f ×, one of 50 from %.2f ×; want about 1.8 and 2.4", big, small)
	}
}
