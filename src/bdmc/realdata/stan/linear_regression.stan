
data {
  int<lower=0> N;
  int<lower=0> K;
  matrix[N, K] x;
  vector[N] y;
  real<lower=0, upper=1> bdmc_lambda;
}
parameters {
  real<lower=0> sigma_sq;
  real<lower=0> scale_sq;
  real alpha;
  vector[K] beta;
}
model {
  target += inv_gamma_lpdf(sigma_sq | 1, 1);
  target += inv_gamma_lpdf(scale_sq | 1, 1);
  target += normal_lpdf(alpha | 0, sqrt(scale_sq));
  target += normal_lpdf(beta | 0, sqrt(scale_sq));
  target += bdmc_lambda * normal_id_glm_lpdf(y | x, alpha, beta, sqrt(sigma_sq));
}
