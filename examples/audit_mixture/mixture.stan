// A two-component Gaussian mixture with exchangeable components (the same prior on each mean, a symmetric
// Dirichlet on the weights). bdmc tempers the likelihood by bdmc_lambda.
data { int<lower=1> n; vector[n] y; real<lower=0, upper=1> bdmc_lambda; }
parameters { simplex[2] w; vector[2] mu; }
model {
  target += dirichlet_lpdf(w | rep_vector(2, 2)) + normal_lpdf(mu | 0, 3);
  for (i in 1:n)
    target += bdmc_lambda * log_mix(w[1], normal_lpdf(y[i] | mu[1], 1), normal_lpdf(y[i] | mu[2], 1));
}
