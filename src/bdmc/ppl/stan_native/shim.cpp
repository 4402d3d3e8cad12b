// bdmc's in-process bridge to a Stan program compiled by stanc (loaded from Python with ctypes).
//
// The program's model object is built ONCE per (data, bdmc_lambda) and reused for every call: the fixed data
// live in a bdmc_data object made once, and only the observed variables and bdmc_lambda change. Each call
// evaluates a whole batch of unconstrained points, optionally split across a pool of threads; every thread that
// touches Stan's autodiff owns its own tape (Stan is built with STAN_THREADS, so the tape is thread-local and must be
// created in the thread that uses it: JAX runs host callbacks in threads of its own).
//
// Errors: a std::domain_error (Stan rejecting a point: a failed argument check, reject()) makes that point's
// log density -inf with a zero gradient, as Stan's samplers reject it; any other exception stops the call and
// its message is returned to Python (status 1).

#include <stan/io/array_var_context.hpp>
#include <stan/model/log_prob_grad.hpp>
#include <stan/model/log_prob_propto.hpp>
#include <stan/model/model_base.hpp>
#include <stan/services/util/create_rng.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

stan::model::model_base &new_model(stan::io::var_context &data_context, unsigned int seed, std::ostream *msg_stream);

namespace {

struct Variable {
  std::string name;
  std::vector<size_t> dims;
  std::vector<double> reals;  // column-major, as Stan's var_context wants
  std::vector<int> ints;
  bool is_int = false;
};

void copy_message(const std::string &text, char *err, size_t errlen) {
  if (err == nullptr || errlen == 0) return;
  std::size_t n = std::min(text.size(), errlen - 1);
  std::memcpy(err, text.data(), n);
  err[n] = '\0';
}

// Stan's autodiff tape of the calling thread (created on first use in that thread, freed at its exit).
void ensure_tape() {
  static thread_local stan::math::ChainableStack tape;
  (void)tape;
}

// Worker threads kept for the life of the process, so that each builds its autodiff tape once: a thread started
// per call pays for a fresh tape, which costs more than a cheap gradient (threads were then slower than one).
class Workers {
 public:
  // job(w) for w in 1..count-1 on the workers and job(0) in the calling thread; returns when all are done.
  void run(size_t count, const std::function<void(size_t)> &job) {
    std::lock_guard<std::mutex> one_at_a_time(serial_);
    std::unique_lock<std::mutex> lock(mutex_);
    while (threads_.size() + 1 < count) {
      size_t id = threads_.size() + 1;
      threads_.emplace_back([this, id] { loop(id); });
    }
    job_ = &job;
    active_ = count;
    pending_ = count - 1;
    ++generation_;
    wake_.notify_all();
    lock.unlock();
    job(0);
    lock.lock();
    done_.wait(lock, [this] { return pending_ == 0; });
    job_ = nullptr;
  }

 private:
  void loop(size_t id) {
    size_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return generation_ != seen; });
      seen = generation_;
      if (id >= active_) continue;  // this call needs fewer workers
      const auto *job = job_;
      lock.unlock();
      (*job)(id);
      lock.lock();
      if (--pending_ == 0) done_.notify_all();
    }
  }

  std::mutex serial_, mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> threads_;
  const std::function<void(size_t)> *job_ = nullptr;
  size_t active_ = 0, pending_ = 0, generation_ = 0;
};

Workers &worker_pool() {
  static Workers *pool = new Workers;  // never destroyed: its threads wait until the process exits
  return *pool;
}

}  // namespace

struct bdmc_data {
  std::vector<Variable> vars;
};

extern "C" {

int bdmc_shim_abi() { return 1; }

bdmc_data *bdmc_data_new() { return new bdmc_data(); }

void bdmc_data_free(bdmc_data *data) { delete data; }

void bdmc_data_add_real(bdmc_data *data, const char *name, const double *values, size_t size, const size_t *dims,
                        int ndims) {
  Variable v;
  v.name = name;
  v.dims.assign(dims, dims + ndims);
  v.reals.assign(values, values + size);
  data->vars.push_back(std::move(v));
}

void bdmc_data_add_int(bdmc_data *data, const char *name, const long long *values, size_t size, const size_t *dims,
                       int ndims) {
  Variable v;
  v.name = name;
  v.is_int = true;
  v.dims.assign(dims, dims + ndims);
  v.ints.assign(values, values + size);
  data->vars.push_back(std::move(v));
}

// A model built from `base` with the variables of `override_` (may be null) replacing or adding to it.
void *bdmc_model_new(const bdmc_data *base, const bdmc_data *override_, char *err, size_t errlen) {
  std::vector<std::string> names_r, names_i;
  std::vector<double> values_r;
  std::vector<int> values_i;
  std::vector<std::vector<size_t>> dims_r, dims_i;
  auto add = [&](const Variable &v) {
    if (v.is_int) {
      names_i.push_back(v.name);
      values_i.insert(values_i.end(), v.ints.begin(), v.ints.end());
      dims_i.push_back(v.dims);
    } else {
      names_r.push_back(v.name);
      values_r.insert(values_r.end(), v.reals.begin(), v.reals.end());
      dims_r.push_back(v.dims);
    }
  };
  auto overridden = [&](const std::string &name) {
    if (override_ == nullptr) return false;
    for (const auto &v : override_->vars)
      if (v.name == name) return true;
    return false;
  };
  for (const auto &v : base->vars)
    if (!overridden(v.name)) add(v);
  if (override_ != nullptr)
    for (const auto &v : override_->vars) add(v);
  try {
    stan::io::array_var_context context(names_r, values_r, dims_r, names_i, values_i, dims_i);
    std::ostringstream messages;
    return &new_model(context, 0u, &messages);
  } catch (const std::exception &e) {
    copy_message(e.what(), err, errlen);
    return nullptr;
  }
}

void bdmc_model_free(void *model) { delete static_cast<stan::model::model_base *>(model); }

size_t bdmc_num_params_r(const void *model) {
  return static_cast<const stan::model::model_base *>(model)->num_params_r();
}

// "name:d1,d2;name2:;..." for the program's parameters (not transformed parameters or generated quantities).
int bdmc_param_info(const void *model, char *out, size_t outlen) {
  const auto *m = static_cast<const stan::model::model_base *>(model);
  std::vector<std::string> names;
  std::vector<std::vector<size_t>> dims;
  m->get_param_names(names, false, false);
  m->get_dims(dims, false, false);
  std::ostringstream text;
  for (size_t k = 0; k < names.size(); ++k) {
    text << names[k] << ':';
    for (size_t j = 0; j < dims[k].size(); ++j) text << (j ? "," : "") << dims[k][j];
    text << ';';
  }
  std::string s = text.str();
  if (s.size() + 1 > outlen) return static_cast<int>(s.size() + 1);
  copy_message(s, out, outlen);
  return 0;
}

// Log densities (Stan's log_prob with propto and the Jacobian, as httpstan's) of n points x[n, dim], and
// their gradients into grad[n, dim] when grad is not null. Values alone are computed on autodiff variables
// (propto drops constants only where parameters are autodiff variables), or in plain doubles when
// `double_values` is set: the caller sets it for programs without `~` / _lupdf / _lupmf, where the two agree
// and doubles cost no tape. Returns 0, or 1 with the message in err.
int bdmc_log_density(const void *model, size_t n, size_t dim, const double *x, double *lp, double *grad,
                     int double_values, int num_threads, char *err, size_t errlen) {
  const auto &m = *static_cast<const stan::model::model_base *>(model);
  if (dim != m.num_params_r()) {
    copy_message("expected " + std::to_string(m.num_params_r()) + " unconstrained parameters, got " +
                     std::to_string(dim), err, errlen);
    return 1;
  }
  auto work = [&](size_t begin, size_t end, std::string *failure) {
    ensure_tape();
    std::vector<double> params(dim), gradient;
    std::vector<int> params_i;
    for (size_t i = begin; i < end; ++i) {
      params.assign(x + i * dim, x + (i + 1) * dim);
      try {
        if (grad != nullptr) {
          lp[i] = stan::model::log_prob_grad<true, true>(m, params, params_i, gradient, nullptr);
          std::copy(gradient.begin(), gradient.end(), grad + i * dim);
        } else if (double_values) {
          lp[i] = m.log_prob_jacobian(params, params_i, nullptr);
        } else {
          lp[i] = stan::model::log_prob_propto<true>(m, params, params_i, nullptr);
        }
      } catch (const std::domain_error &) {  // Stan rejects the point
        lp[i] = -std::numeric_limits<double>::infinity();
        if (grad != nullptr) std::fill(grad + i * dim, grad + (i + 1) * dim, 0.0);
      } catch (const std::exception &e) {
        *failure = std::string(e.what()).empty() ? "unknown error" : e.what();
        return;
      } catch (...) {
        *failure = "unknown C++ exception";
        return;
      }
    }
  };
  size_t workers = std::max<size_t>(1, std::min<size_t>(num_threads > 0 ? num_threads : 1, n));
  std::vector<std::string> failures(workers);
  if (workers == 1) {
    work(0, n, &failures[0]);
  } else {
    size_t chunk = (n + workers - 1) / workers;
    worker_pool().run(workers, [&](size_t w) {
      work(std::min(n, w * chunk), std::min(n, (w + 1) * chunk), &failures[w]);
    });
  }
  for (const auto &f : failures)
    if (!f.empty()) {
      copy_message(f, err, errlen);
      return 1;
    }
  return 0;
}

// Constrained parameters (no transformed parameters or generated quantities) of n points; out[n, size].
int bdmc_write_array(const void *model, size_t n, size_t dim, const double *x, double *out, size_t size, char *err,
                     size_t errlen) {
  const auto &m = *static_cast<const stan::model::model_base *>(model);
  try {
    stan::rng_t rng = stan::services::util::create_rng(0, 1);
    for (size_t i = 0; i < n; ++i) {
      Eigen::VectorXd params = Eigen::Map<const Eigen::VectorXd>(x + i * dim, dim), values;
      m.write_array(rng, params, values, false, false, nullptr);
      if (static_cast<size_t>(values.size()) != size) throw std::runtime_error("unexpected number of parameters");
      std::copy(values.data(), values.data() + size, out + i * size);
    }
  } catch (const std::exception &e) {
    copy_message(e.what(), err, errlen);
    return 1;
  }
  return 0;
}

// The unconstrained vector (out[dim]) of the constrained parameters given as a bdmc_data.
int bdmc_transform_inits(const void *model, const bdmc_data *params, double *out, size_t dim, char *err,
                         size_t errlen) {
  const auto &m = *static_cast<const stan::model::model_base *>(model);
  std::vector<std::string> names_r, names_i;
  std::vector<double> values_r;
  std::vector<int> values_i;
  std::vector<std::vector<size_t>> dims_r, dims_i;
  for (const auto &v : params->vars) {
    names_r.push_back(v.name);
    values_r.insert(values_r.end(), v.reals.begin(), v.reals.end());
    dims_r.push_back(v.dims);
  }
  try {
    stan::io::array_var_context context(names_r, values_r, dims_r, names_i, values_i, dims_i);
    Eigen::VectorXd unconstrained;
    m.transform_inits(context, unconstrained, nullptr);
    if (static_cast<size_t>(unconstrained.size()) != dim) throw std::runtime_error("unexpected unconstrained size");
    std::copy(unconstrained.data(), unconstrained.data() + dim, out);
  } catch (const std::exception &e) {
    copy_message(e.what(), err, errlen);
    return 1;
  }
  return 0;
}

}  // extern "C"
