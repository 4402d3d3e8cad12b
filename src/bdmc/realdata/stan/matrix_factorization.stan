
data {
  int<lower=1> num_rows;
  int<lower=1> num_cols;
  int<lower=1> latent_dim;
  int<lower=1> C;
  array[C] int<lower=1, upper=num_rows> rows;
  array[C] int<lower=1, upper=num_cols> cols;
  vector[C] ratings;
  real<lower=0, upper=1> bdmc_lambda;
}
parameters {
  real<lower=0> scale_u_sq;
  real<lower=0> scale_v_sq;
  real<lower=0> sigma_sq;
  matrix[num_rows, latent_dim] U;
  matrix[latent_dim, num_cols] V;
}
model {
  target += inv_gamma_lpdf(scale_u_sq | 1, 1);
  target += inv_gamma_lpdf(scale_v_sq | 1, 1);
  target += inv_gamma_lpdf(sigma_sq | 1, 1);
  target += normal_lpdf(to_vector(U) | 0, sqrt(scale_u_sq));
  target += normal_lpdf(to_vector(V) | 0, sqrt(scale_v_sq));
  target += bdmc_lambda * normal_lpdf(ratings | rows_dot_product(U[rows], V[:, cols]'), sqrt(sigma_sq));
}
