
data {
  int<lower=1> T;
  vector[T] y_prev;
  vector[T] y;
  real<lower=0, upper=1> bdmc_lambda;
}
parameters {
  real alpha;
  real beta;
  real<lower=0> sigma_sq;
}
model {
  target += normal_lpdf(alpha | 0, 1);
  target += normal_lpdf(beta | 1, 0.1);
  target += inv_gamma_lpdf(sigma_sq | 1, 1);
  target += bdmc_lambda * normal_lpdf(y | alpha + beta * y_prev, sqrt(sigma_sq));
}
