
data {
  int<lower=0> N;
  int<lower=0> K;
  matrix[N, K] x;
  array[N] int<lower=0, upper=1> y;
  real<lower=0, upper=1> bdmc_lambda;
}
parameters {
  real<lower=0> scale_sq;
  real alpha;
  vector[K] beta;
}
model {
  target += inv_gamma_lpdf(scale_sq | 1, 1);
  target += normal_lpdf(alpha | 0, sqrt(scale_sq));
  target += normal_lpdf(beta | 0, sqrt(scale_sq));
  target += bdmc_lambda * bernoulli_logit_glm_lpmf(y | x, alpha, beta);
}
