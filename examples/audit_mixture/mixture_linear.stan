// A bug: the components' log densities are mixed linearly, not by log_mix. Otherwise as mixture.stan: two
// exchangeable components (the same prior on each mean, a symmetric Dirichlet on the weights).
data { int<lower=1> n; vector[n] y; real<lower=0, upper=1> bdmc_lambda; }
parameters { simplex[2] w; vector[2] mu; }
model {
  target += dirichlet_lpdf(w | rep_vector(2, 2)) + normal_lpdf(mu | 0, 3);
  for (i in 1:n)
    target += bdmc_lambda * (w[1] * normal_lpdf(y[i] | mu[1], 1) + w[2] * normal_lpdf(y[i] | mu[2], 1));
}
