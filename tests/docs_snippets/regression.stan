data { int N; vector[N] x; vector[N] y; real<lower=0, upper=1> bdmc_lambda; }
parameters { real b; real<lower=0> s; }
model { target += normal_lpdf(b | 0, 1) + exponential_lpdf(s | 1);
        target += bdmc_lambda * normal_lpdf(y | b * x, s); }
