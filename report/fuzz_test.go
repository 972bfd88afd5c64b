package report

import "testing"

// FuzzResults: a --shadow or --ablate file is the user's, or anyone's:
// reading one never panics, and totals the pack accepts add up.
func FuzzResults(f *testing.F) {
	f.Add([]byte(`{"type":"policy","calls":8,"attacks":3,"attacks_stopped":3,"block_rate":1,"benign":5,"benign_stopped":0,"benign_loss":0,"attacks_denied":3,"benign_denied":0,"verified":true,"inputs":[]}` + "\n" +
		`{"type":"check","check":"taint","calls":8,"changed":1,"unevaluable":0,"attacks_stopped_alone":1,"attacks_still_stopped":2,"benign_cost":0,"dead":false}`))
	f.Add([]byte(`{"type":"summary","calls":8,"counts":{"newly-denied":1},"verified":true,"inputs":[]}` + "\n" +
		`{"type":"example","category":"newly-denied","session":"demo","call":"c8","tool":"send_email","baseline":"allow","candidate":"deny","reason":"r"}`))
	f.Add([]byte(`{"type":"policy","calls":1,"attacks":1,"attacks_stopped":1,"block_rate":1e309}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if r, err := readShadow(data); err == nil {
			sum := 0
			for _, n := range r.summary.Counts {
				sum += n
			}
			if len(r.examples) > maxExamples || sum != r.summary.Calls || r.summary.Verified == nil {
				t.Fatalf("accepted a shadow result that does not add up: %+v", r)
			}
		}
		r, err := readAblation(data)
		if err == nil {
			tot := r.totals
			if tot.AttacksStopped > tot.Attacks || tot.BenignStopped > tot.Benign || tot.Attacks+tot.Benign > tot.Calls || tot.Verified == nil {
				t.Fatalf("accepted totals that do not add up: %+v", tot)
			}
		}
	})
}
