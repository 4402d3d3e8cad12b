// XLA FFI handlers for bdmc's Stan shim: the log density (and gradient) of a batch of chains, called by XLA
// in its own thread with no Python in between (a jax.pure_callback hands every call to Python, which costs
// far more than a Stan gradient on small batches).
//
// Compiled apart from the shim (this file needs C++17 and jaxlib's FFI headers, not Stan's), it calls the
// shim's C functions. A bdmc_ffi_program holds the fixed data, the observed variables' names and kinds, and a
// small cache of Stan model objects keyed by (lambda, observation values). Arguments carry leading batch axes
// that broadcast against each other (vmap_method="expand_dims"); values are converted to double on the way
// in and to the output's type on the way out.

#include <cstdint>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

struct bdmc_data;
extern "C" {
bdmc_data *bdmc_data_new();
void bdmc_data_free(bdmc_data *data);
void bdmc_data_add_real(bdmc_data *data, const char *name, const double *values, size_t size, const size_t *dims,
                        int ndims);
void bdmc_data_add_int(bdmc_data *data, const char *name, const long long *values, size_t size, const size_t *dims,
                       int ndims);
void *bdmc_model_new(const bdmc_data *base, const bdmc_data *override_, char *err, size_t errlen);
void bdmc_model_free(void *model);
int bdmc_log_density(const void *model, size_t n, size_t dim, const double *x, double *lp, double *grad,
                     int double_values, int num_threads, char *err, size_t errlen);
}

namespace {

struct Entry {
  double lam;
  std::vector<std::vector<double>> obs;
  void *model;
};

}  // namespace

struct bdmc_ffi_program {
  const bdmc_data *base;
  std::string name, lambda_name;
  std::vector<std::string> obs_names;
  std::vector<int> obs_is_int;
  std::vector<std::vector<size_t>> obs_dims;
  int double_values, num_threads;
  std::mutex mutex;
  std::list<Entry> cache;  // most recently used first
};

namespace {

constexpr size_t kCached = 8;

double read(const void *data, ffi::DataType type, size_t i) {
  switch (type) {
    case ffi::DataType::F64: return static_cast<const double *>(data)[i];
    case ffi::DataType::F32: return static_cast<const float *>(data)[i];
    case ffi::DataType::S64: return static_cast<double>(static_cast<const int64_t *>(data)[i]);
    case ffi::DataType::S32: return static_cast<const int32_t *>(data)[i];
    default: return 0.0;
  }
}

bool supported(ffi::DataType type) {
  return type == ffi::DataType::F64 || type == ffi::DataType::F32 || type == ffi::DataType::S64 ||
         type == ffi::DataType::S32;
}

void write(void *data, ffi::DataType type, size_t i, double value) {
  if (type == ffi::DataType::F64) static_cast<double *>(data)[i] = value;
  else static_cast<float *>(data)[i] = static_cast<float>(value);
}

// The model for (lam, obs): from the cache, or built (call with the program's mutex held).
void *model_for(bdmc_ffi_program &p, double lam, std::vector<std::vector<double>> &&obs, std::string *error) {
  for (auto it = p.cache.begin(); it != p.cache.end(); ++it)
    if (it->lam == lam && it->obs == obs) {
      p.cache.splice(p.cache.begin(), p.cache, it);
      return it->model;
    }
  bdmc_data *changes = bdmc_data_new();
  for (size_t k = 0; k < obs.size(); ++k) {
    const auto &dims = p.obs_dims[k];
    // JAX's row-major values to Stan's column-major order.
    std::vector<double> column(obs[k].size());
    std::vector<size_t> index(dims.size(), 0);
    for (size_t i = 0; i < obs[k].size(); ++i) {
      size_t j = 0, stride = 1;
      for (size_t d = 0; d < dims.size(); ++d) {
        j += index[d] * stride;
        stride *= dims[d];
      }
      column[j] = obs[k][i];
      for (size_t d = dims.size(); d-- > 0;) {  // next row-major index
        if (++index[d] < dims[d]) break;
        index[d] = 0;
      }
    }
    if (p.obs_is_int[k]) {
      std::vector<long long> ints(column.begin(), column.end());
      bdmc_data_add_int(changes, p.obs_names[k].c_str(), ints.data(), ints.size(), dims.data(),
                        static_cast<int>(dims.size()));
    } else {
      bdmc_data_add_real(changes, p.obs_names[k].c_str(), column.data(), column.size(), dims.data(),
                         static_cast<int>(dims.size()));
    }
  }
  size_t scalar[1] = {0};
  bdmc_data_add_real(changes, p.lambda_name.c_str(), &lam, 1, scalar, 0);
  char err[4096] = {0};
  void *model = bdmc_model_new(p.base, changes, err, sizeof err);
  bdmc_data_free(changes);
  if (model == nullptr) {
    *error = std::string("the Stan program ") + p.name + " rejects its data: " + err;
    return nullptr;
  }
  p.cache.push_front(Entry{lam, std::move(obs), model});
  while (p.cache.size() > kCached) {
    bdmc_model_free(p.cache.back().model);
    p.cache.pop_back();
  }
  return model;
}

ffi::Error evaluate(int64_t handle, ffi::AnyBuffer x, ffi::AnyBuffer lam, ffi::RemainingArgs obs, ffi::AnyBuffer *lp,
                    ffi::AnyBuffer *grad) {
  auto &p = *reinterpret_cast<bdmc_ffi_program *>(handle);
  auto xdims = x.dimensions();
  if (xdims.size() < 1) return ffi::Error::InvalidArgument("the latent must have at least one axis");
  const size_t rank = xdims.size() - 1, dim = static_cast<size_t>(xdims[rank]);
  if (obs.size() != p.obs_names.size()) return ffi::Error::InvalidArgument("wrong number of observed variables");
  // Each argument's batch axes (the leading ones) and its per-chain size.
  std::vector<ffi::AnyBuffer> obs_buffers;
  for (size_t k = 0; k < obs.size(); ++k) {
    auto b = obs.get<ffi::AnyBuffer>(k);
    if (b.has_error()) return b.error();
    obs_buffers.push_back(*b);
  }
  auto batch_of = [&](const ffi::AnyBuffer &b, size_t event_rank, std::vector<int64_t> *out) -> bool {
    auto d = b.dimensions();
    if (d.size() == event_rank) {
      out->assign(rank, 1);
      return true;
    }
    if (d.size() != rank + event_rank) return false;
    out->assign(d.begin(), d.begin() + rank);
    return true;
  };
  std::vector<int64_t> xb(xdims.begin(), xdims.begin() + rank), lb;
  std::vector<std::vector<int64_t>> ob(obs.size());
  if (!batch_of(lam, 0, &lb)) return ffi::Error::InvalidArgument("lambda's batch axes do not match the latent's");
  for (size_t k = 0; k < obs.size(); ++k)
    if (!batch_of(obs_buffers[k], p.obs_dims[k].size(), &ob[k]) || !supported(obs_buffers[k].element_type()))
      return ffi::Error::InvalidArgument("observed variable " + p.obs_names[k] + " has unexpected axes or type");
  std::vector<int64_t> batch(rank);
  size_t size = 1;
  for (size_t d = 0; d < rank; ++d) {
    int64_t n = xb[d];
    n = std::max(n, lb[d]);
    for (const auto &o : ob) n = std::max(n, o[d]);
    batch[d] = n;
    size *= static_cast<size_t>(n);
  }
  std::vector<size_t> obs_sizes(obs.size(), 1);
  for (size_t k = 0; k < obs.size(); ++k)
    for (size_t s : p.obs_dims[k]) obs_sizes[k] *= s;
  // Flat offsets (in chains) of each chain's x, lambda and observations in their own batch layouts.
  auto offset = [&](const std::vector<int64_t> &own, const std::vector<int64_t> &index) {
    size_t flat = 0;
    for (size_t d = 0; d < rank; ++d) flat = flat * own[d] + (own[d] == 1 ? 0 : index[d]);
    return flat;
  };
  std::map<std::pair<std::vector<size_t>, double>, std::vector<std::pair<size_t, size_t>>> groups;
  std::vector<int64_t> index(rank, 0);
  for (size_t i = 0; i < size; ++i) {
    std::vector<size_t> obs_at(obs.size());
    for (size_t k = 0; k < obs.size(); ++k) obs_at[k] = offset(ob[k], index);
    double lam_i = read(lam.untyped_data(), lam.element_type(), offset(lb, index));
    groups[{obs_at, lam_i}].push_back({i, offset(xb, index)});
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < batch[d]) break;
      index[d] = 0;
    }
  }
  std::vector<double> xs, values, grads;
  for (const auto &[key, members] : groups) {
    std::vector<std::vector<double>> obs_values(obs.size());
    for (size_t k = 0; k < obs.size(); ++k) {
      obs_values[k].resize(obs_sizes[k]);
      for (size_t j = 0; j < obs_sizes[k]; ++j)
        obs_values[k][j] = read(obs_buffers[k].untyped_data(), obs_buffers[k].element_type(),
                                key.first[k] * obs_sizes[k] + j);
    }
    const size_t n = members.size();
    xs.resize(n * dim);
    values.resize(n);
    grads.resize(grad ? n * dim : 0);
    for (size_t m = 0; m < n; ++m)
      for (size_t j = 0; j < dim; ++j)
        xs[m * dim + j] = read(x.untyped_data(), x.element_type(), members[m].second * dim + j);
    char err[4096] = {0};
    int status;
    {
      std::lock_guard<std::mutex> lock(p.mutex);
      std::string error;
      void *model = model_for(p, key.second, std::move(obs_values), &error);
      if (model == nullptr) return ffi::Error::Internal(error);
      status = bdmc_log_density(model, n, dim, xs.data(), values.data(), grad ? grads.data() : nullptr,
                                p.double_values, p.num_threads, err, sizeof err);
    }
    if (status != 0) return ffi::Error::Internal(std::string("the Stan program ") + p.name + " failed: " + err);
    for (size_t m = 0; m < n; ++m) {
      write(lp->untyped_data(), lp->element_type(), members[m].first, values[m]);
      if (grad)
        for (size_t j = 0; j < dim; ++j)
          write(grad->untyped_data(), grad->element_type(), members[m].first * dim + j, grads[m * dim + j]);
    }
  }
  return ffi::Error::Success();
}

ffi::Error value_impl(ffi::AnyBuffer x, ffi::AnyBuffer lam, ffi::RemainingArgs obs, ffi::Result<ffi::AnyBuffer> lp,
                      int64_t program) {
  return evaluate(program, x, lam, obs, &*lp, nullptr);
}

ffi::Error value_grad_impl(ffi::AnyBuffer x, ffi::AnyBuffer lam, ffi::RemainingArgs obs,
                           ffi::Result<ffi::AnyBuffer> lp, ffi::Result<ffi::AnyBuffer> grad, int64_t program) {
  return evaluate(program, x, lam, obs, &*lp, &*grad);
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(bdmc_ffi_value, value_impl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .RemainingArgs()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<int64_t>("program"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(bdmc_ffi_value_grad, value_grad_impl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .RemainingArgs()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<int64_t>("program"));

extern "C" {

bdmc_ffi_program *bdmc_ffi_program_new(const bdmc_data *base, const char *name, const char *lambda_name, int num_obs,
                                       const char **obs_names, const int *obs_is_int, const int *obs_ndims,
                                       const size_t *obs_dims, int double_values, int num_threads) {
  auto *p = new bdmc_ffi_program();
  p->base = base;
  p->name = name;
  p->lambda_name = lambda_name;
  p->double_values = double_values;
  p->num_threads = num_threads;
  size_t at = 0;
  for (int k = 0; k < num_obs; ++k) {
    p->obs_names.emplace_back(obs_names[k]);
    p->obs_is_int.push_back(obs_is_int[k]);
    p->obs_dims.emplace_back(obs_dims + at, obs_dims + at + obs_ndims[k]);
    at += obs_ndims[k];
  }
  return p;
}

void bdmc_ffi_program_free(bdmc_ffi_program *p) {
  for (auto &e : p->cache) bdmc_model_free(e.model);
  delete p;
}

}  // extern "C"
