
data {
  int<lower=1> N;
  int<lower=1> D;
  int<lower=1> K;
  matrix[N, D] y;
  real<lower=0, upper=1> bdmc_lambda;
}
transformed data {
  real y_sq = sum(columns_dot_self(y));
}
parameters {
  real<lower=0> scale_sq;
  real<lower=0> sigma_sq;
  matrix[K, D] mu;
  simplex[K] pi;
}
model {
  target += inv_gamma_lpdf(scale_sq | 1, 1);
  target += inv_gamma_lpdf(sigma_sq | 1, 1);
  target += normal_lpdf(to_vector(mu) | 0, sqrt(scale_sq));
  // dirichlet_lpdf(pi | rep_vector(1, K)), which is log (K - 1)! on the simplex: written out, because the
  // function computes (1 - 1) * log(pi_k), NaN where a component of pi underflows to 0.
  target += lgamma(K);
  // As normal_lpdf does, reject a scale that underflowed to zero or overflowed (the density is zero there).
  if (!(sigma_sq > 0) || is_inf(sigma_sq)) reject("sigma_sq must be positive and finite, got ", sigma_sq);
  if (bdmc_lambda > 0) {  // at lambda = 0 the prior alone (0 * -inf would be NaN)
    // log N(y_n | mu_k, sigma_sq I) = -(|y_n|^2 - 2 y_n . mu_k + |mu_k|^2) / (2 sigma_sq) - D log(2 pi sigma_sq) / 2:
    // the |y_n|^2 part is the same for every k, so it leaves the log-sum-exp over components, summed once.
    matrix[N, K] cross = y * (mu' / sigma_sq);
    vector[K] shift = log(pi) - columns_dot_self(mu')' / (2 * sigma_sq);
    vector[N] lse = col(cross, 1) + shift[1];
    for (k in 2:K) lse = log_sum_exp(lse, col(cross, k) + shift[k]);
    real loglik = sum(lse) - y_sq / (2 * sigma_sq);
    if (is_nan(loglik)) {
      // Those parts overflowed to inf - inf (extreme sigma_sq or mu): the squared distances themselves do not.
      vector[K] log_pi = log(pi);
      lse = log_pi[1] - rows_dot_self(y - rep_matrix(row(mu, 1), N)) / (2 * sigma_sq);
      for (k in 2:K)
        lse = log_sum_exp(lse, log_pi[k] - rows_dot_self(y - rep_matrix(row(mu, k), N)) / (2 * sigma_sq));
      loglik = sum(lse);
    }
    // 1.8378770664093453 is log(2 pi) (the parameter pi hides Stan's pi()).
    target += bdmc_lambda * (loglik - 0.5 * N * D * (1.8378770664093453 + log(sigma_sq)));
  }
}
