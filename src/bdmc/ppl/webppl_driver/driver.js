// bdmc's WebPPL driver: compiles one WebPPL program once and serves evaluations over JSON lines.
//
// Usage: node driver.js <path of the webppl package>
// Requests (one JSON object per line on stdin; one reply per line on stdout):
//   {op: "init", program, data}        compile; the program's value is the model function of `data`
//   {op: "data", add, drop}            keep each set of observed values of `add` ({id: values}) under its id,
//                                      forget the ids in `drop` (the host decides what is kept)
//   {op: "eval", data, u, cot?}        replay each latent vector of `u` at the sample sites on the data set `data`
//                                      (an id, or one id per row of `u`): the prior (with
//                                      log-Jacobians) and one term per observe/factor; with `cot` (one row
//                                      [c_prior, c_1..c_N] per latent) the gradient in u of
//                                      c_prior * prior + sum_i c_i * term_i through WebPPL's autodiff; with
//                                      `grads: true` the values and the gradients of the prior and of the
//                                      terms' sum, from one run
//   {op: "forward", seeds, data}       run the program forward (prior draws), one seeded run per seed
//   {op: "simulate", seeds, data, u}   replay `u` at the sample sites and draw every observe
//   {op: "constrain", data, u}         each site's constrained value at `u`
//   {op: "unconstrain", data, x}       the unconstrained vector of constrained site values `x`
// Replies: {ok: true, ...} or {error: message, kind}. Non-finite numbers travel as "-inf", "inf", "nan".
'use strict';

var path = require('path');
var readline = require('readline');

var root = process.argv[2];
var webppl = require(path.join(root, 'src', 'main.js'));
var ad = require(path.join(root, 'src', 'ad.js'));
var util = require(path.join(root, 'src', 'util.js'));
var Tensor = require(path.join(root, 'src', 'tensor.js'));

var env = null;
webppl.requireHeaderWrapper(function(e) { env = e; return {}; });

var state = {model: null, fixed: {}, sites: null, numTerms: null, datasets: {}};

function StructureError(message) { this.message = message; }

function encode(x) {
  if (typeof x === 'number' && !isFinite(x)) { return isNaN(x) ? 'nan' : (x > 0 ? 'inf' : '-inf'); }
  return x;
}

function flat(value) {
  value = ad.value(value);
  if (value instanceof Tensor) { return Array.prototype.slice.call(value.data); }
  if (typeof value === 'number') { return [value]; }
  if (Array.isArray(value)) { return [].concat.apply([], value.map(flat)); }
  throw new Error('a sampled or observed value must be a number, an array or a tensor, got ' +
                  JSON.stringify(value));
}

// The unconstrained map of a scalar site, from its distribution's support.
function supportOf(dist) {
  if (!dist.support) { return {kind: 'real'}; }
  var s = dist.support();
  var hasLo = isFinite(ad.value(s.lower)), hasHi = isFinite(ad.value(s.upper));
  if (hasLo && hasHi) { return {kind: 'interval', lower: s.lower, upper: s.upper}; }
  if (hasLo) { return {kind: 'lower', lower: s.lower}; }
  if (hasHi) { return {kind: 'upper', upper: s.upper}; }
  return {kind: 'real'};
}

// [constrained value, log-Jacobian] of a scalar unconstrained u (AD-aware).
function constrain(u, support) {
  var S = ad.scalar;
  switch (support.kind) {
    case 'real': return [u, 0];
    case 'lower': return [S.add(support.lower, S.exp(u)), u];
    case 'upper': return [S.sub(support.upper, S.exp(u)), u];
    default: {
      var width = S.sub(support.upper, support.lower);
      var sig = S.div(1, S.add(1, S.exp(S.neg(u))));
      // log sigmoid(u) + log sigmoid(-u) = -|u| - 2 log(1 + exp(-|u|)), stable for large |u|
      var a = S.abs(u);
      var logJ = S.add(S.log(width), S.sub(S.neg(a), S.mul(2, S.log(S.add(1, S.exp(S.neg(a)))))));
      return [S.add(support.lower, S.mul(width, sig)), logJ];
    }
  }
}

function unconstrain(x, support) {
  switch (support.kind) {
    case 'real': return x;
    case 'lower': return Math.log(x - ad.value(support.lower));
    case 'upper': return Math.log(ad.value(support.upper) - x);
    default: {
      var p = (x - ad.value(support.lower)) / (ad.value(support.upper) - ad.value(support.lower));
      return Math.log(p) - Math.log1p(-p);
    }
  }
}

function describe(dist, a) { return dist.meta.name + ' at address ' + a; }

// Refuse what bdmc cannot move, and any departure from the first run's sites (with `size`, its size too).
function checkSite(index, dist, a, size) {
  if (!dist.isContinuous) {
    throw new StructureError('sample site #' + index + ' (' + describe(dist, a) + ') is discrete: bdmc moves ' +
      'continuous latents only; sum it out in the program (e.g. with a mixture likelihood)');
  }
  if (dist.noHMC) {
    throw new StructureError('sample site #' + index + ' (' + describe(dist, a) + ') has no unconstrained ' +
      'parametrization in bdmc (simplex-valued distributions are not supported)');
  }
  if (state.sites === null) { return; }
  var want = state.sites[index];
  if (want === undefined || want.address !== a || want.dist !== dist.meta.name ||
      (size !== undefined && want.size !== size)) {
    var first = want === undefined ? 'no such site' :
      want.dist + ' at address ' + want.address + ' (size ' + want.size + ')';
    throw new StructureError('the program\'s structure changed: sample site #' + index + ' is ' +
      describe(dist, a) + (size !== undefined ? ' (size ' + size + ')' : '') + ', where the first run had ' +
      first + '; bdmc needs the same sample sites, in the same order, at every evaluation');
  }
}

function finishStructure(count, terms) {
  if (state.sites !== null && count !== state.sites.length) {
    throw new StructureError('the program\'s structure changed: this run visited ' + count +
      ' sample site(s), the first run ' + state.sites.length);
  }
  if (state.numTerms !== null && terms !== null && terms !== state.numTerms) {
    throw new StructureError('the program\'s structure changed: this run visited ' + terms +
      ' observe/factor statement(s), the first run ' + state.numTerms);
  }
}

// Run the model function once under a coroutine, synchronously on a trampoline of our own.
function runModel(coroutine, data) {
  var old = env.coroutine;
  env.coroutine = coroutine;
  try {
    var t = function() { return state.model({}, function() { return undefined; }, '', data); };
    while (t) { t = t(); }
  } finally {
    env.coroutine = old;
  }
}

function baseCoroutine() {
  return {a: '', incrementalize: env.defaultCoroutine.incrementalize, exit: function() { return undefined; }};
}

function siteValue(known, dist, u, pos, lifted) {
  if (known.tensor) {
    var t = new Tensor(known.dims).fromFlatArray(u.slice(pos, pos + known.size));
    t = lifted ? ad.lift(t) : t;
    return {input: t, value: t, logJ: 0};
  }
  var ui = lifted ? ad.lift(u[pos]) : u[pos];
  var xj = constrain(ui, supportOf(dist));
  return {input: ui, value: xj[0], logJ: xj[1]};
}

// Replay a latent vector u: the prior with log-Jacobians, one likelihood term per observe/factor.
function replay(u, data, lifted) {
  var co = baseCoroutine(), pos = 0, index = 0, prior = 0, terms = [], inputs = [];
  co.sample = function(s, k, a, dist) {
    checkSite(index, dist, a);
    var known = state.sites[index];
    if (pos + known.size > u.length) {
      throw new StructureError('the latent vector has ' + u.length + ' entries, fewer than the sites need');
    }
    var site = siteValue(known, dist, u, pos, lifted);
    inputs.push(site.input);
    prior = ad.scalar.add(prior, ad.scalar.add(dist.score(site.value), site.logJ));
    pos += known.size;
    index += 1;
    return k(s, site.value);
  };
  co.factor = function(s, k, a, score) {
    terms.push(score);
    return k(s);
  };
  try {
    runModel(co, data);
  } catch (e) {
    if (!isInvalidParameter(e)) { throw e; }
    // A distribution refused its parameters (a scale of 0 or inf at an extreme point): its density is zero there,
    // as Stan rejects such a point. Before the last sample site the prior is -inf (the terms are then not
    // reached: 0, so that no weight makes them NaN); after it, the failing term is -inf.
    var reached = index < state.sites.length ? [] : terms.map(ad.value);
    var rest = state.numTerms - reached.length;
    return {invalid: true, prior: index < state.sites.length ? -Infinity : ad.value(prior),
            terms: reached.concat(rest > 0 ? [index < state.sites.length ? 0 : -Infinity] : [],
                                  new Array(Math.max(rest - 1, 0)).fill(0))};
  }
  finishStructure(index, terms.length);
  if (pos !== u.length) {
    throw new StructureError('the latent vector has ' + u.length + ' entries, the program\'s sites ' + pos);
  }
  return {prior: prior, terms: terms, inputs: inputs};
}

function isInvalidParameter(e) {
  return e instanceof Error && /^Parameter "[^"]+" should be of type/.test(e.message);
}

// A forward run. Sample sites are drawn (no opts.u, no opts.x), replayed from an unconstrained vector
// (opts.u) or set to constrained values (opts.x, one flat array per site); observes are drawn when opts.draw.
function forward(data, opts) {
  var co = baseCoroutine(), index = 0, pos = 0, latent = [], values = [], sites = [], observed = [], factors = 0;
  co.sample = function(s, k, a, dist) {
    checkSite(index, dist, a);
    var known = state.sites !== null ? state.sites[index] : null, value;
    if (opts.u) {
      value = siteValue(known, dist, opts.u, pos, false).value;
      pos += known.size;
    } else if (opts.x) {
      var given = opts.x[index];
      if (!Array.isArray(given) || given.length !== known.size) {
        throw new StructureError('sample site #' + index + ' (' + describe(dist, a) + ') needs ' + known.size +
          ' value(s), got ' + JSON.stringify(given));
      }
      value = known.tensor ? new Tensor(known.dims).fromFlatArray(given) : given[0];
    } else {
      value = dist.sample();
    }
    var flatValue = flat(value), isTensor = value instanceof Tensor;
    checkSite(index, dist, a, flatValue.length);
    values.push(flatValue.map(encode));
    if (isTensor) {
      latent.push.apply(latent, flatValue);
    } else {
      latent.push(unconstrain(flatValue[0], supportOf(dist)));
    }
    sites.push({address: a, dist: dist.meta.name, size: flatValue.length, tensor: isTensor,
                dims: isTensor ? value.dims.slice() : null});
    index += 1;
    return k(s, value);
  };
  co.observe = function(s, k, a, dist, val) {
    factors += 1;
    if (!opts.draw) { return k(s, val); }
    var value = dist.sample();
    observed.push.apply(observed, flat(value));
    return k(s, value);
  };
  co.factor = function(s, k, a) {
    factors += 1;
    if (opts.draw) {
      throw new StructureError('the program scores data with factor() (at address ' + a + '), which cannot ' +
        'be run forward to simulate data: write the likelihood with observe(dist, value), or pass simulate= ' +
        'to from_webppl');
    }
    return k(s);
  };
  runModel(co, data);
  finishStructure(index, factors);
  return {latent: latent.map(encode), values: values, observed: observed.map(encode), sites: sites,
          terms: factors};
}

function dataFor(id) {
  var values = state.datasets[id];
  if (values === undefined) { throw new Error('unknown data set ' + id); }
  return Object.assign({}, state.fixed, values);
}

// The derivatives of `total` in the replayed latent's entries (its value: a site's tensor or its scalar u).
function gradient(total, inputs) {
  var g = [];
  if (ad.isLifted(total)) { total.backprop(); }
  inputs.forEach(function(input) {
    var d = ad.derivative(input);
    if (d instanceof Tensor) { g.push.apply(g, Array.prototype.slice.call(d.data)); } else { g.push(d || 0); }
  });
  if (ad.isLifted(total)) { total.zeroDerivatives(); }  // the next gradient of this run starts from zero
  return g.map(encode);
}

function sumOf(values, weights) {
  var total = 0;
  for (var j = 0; j < values.length; j++) {
    var w = weights ? weights[j] : 1;
    if (w !== 0) { total = ad.scalar.add(total, w === 1 ? values[j] : ad.scalar.mul(w, values[j])); }
  }
  return total;
}

// One replay per row of req.u: the prior and the terms; with req.cot the gradient of each row's weighted sum
// c_prior * prior + sum_i c_i * term_i; with req.grads the prior, the terms and the gradients of the prior and of
// the terms' sum, all from one run (what a gradient-based kernel needs at each step).
function evaluate(req) {
  var prior = [], terms = [], grads = [], gPrior = [], gTerms = [];
  var rowData = Array.isArray(req.data), shared = rowData ? null : dataFor(req.data);
  var merged = {};  // the merged data object of each id of this request
  var lifted = !!(req.cot || req.grads);
  for (var i = 0; i < req.u.length; i++) {
    var data = shared;
    if (rowData) {
      var id = req.data[i];
      data = merged[id] || (merged[id] = dataFor(id));
    }
    var out = replay(req.u[i], data, lifted), zeros = req.u[i].map(function() { return encode(0); });
    if (!req.cot) {
      prior.push(encode(ad.value(out.prior)));
      terms.push(out.terms.map(function(t) { return encode(ad.value(t)); }));
    }
    if (out.invalid && lifted) {  // zero density: no gradient to follow (the kernel rejects the point)
      if (req.cot) { grads.push(zeros); } else { gPrior.push(zeros); gTerms.push(zeros); }
      continue;
    }
    if (req.cot) {
      var c = req.cot[i];
      grads.push(gradient(ad.scalar.add(ad.scalar.mul(c[0], out.prior), sumOf(out.terms, c.slice(1))),
                          out.inputs));
    } else if (req.grads) {
      gPrior.push(gradient(out.prior, out.inputs));
      gTerms.push(gradient(sumOf(out.terms, null), out.inputs));
    }
  }
  if (req.cot) { return {grad: grads}; }
  return req.grads ? {prior: prior, terms: terms, gradPrior: gPrior, gradTerms: gTerms} : {prior: prior, terms: terms};
}

function handle(req) {
  switch (req.op) {
    case 'init': {
      var compiled = webppl.compile(req.program, {filename: req.name || 'webppl:program'});
      var value;
      webppl.prepare(compiled, function(s, x) { value = x; }, {}).run();
      if (typeof value !== 'function') {
        throw new Error('the program\'s value (its last expression) must be the model function of `data`, got ' +
                        (value === undefined ? 'undefined' : typeof value));
      }
      state.model = value;
      state.fixed = req.data;
      state.datasets = {init: {}};
      util.seedRNG(0);
      var probe = forward(dataFor('init'), {});
      state.sites = probe.sites;
      state.numTerms = probe.terms;
      return {sites: probe.sites, terms: probe.terms};
    }
    case 'data': {
      (req.drop || []).forEach(function(id) { delete state.datasets[id]; });
      Object.keys(req.add || {}).forEach(function(id) { state.datasets[id] = req.add[id]; });
      return {};
    }
    case 'eval':
      return evaluate(req);
    case 'forward':
    case 'simulate':
    case 'constrain':
    case 'unconstrain': {
      var runs = [], d = dataFor(req.data), n = (req.seeds || req.u || req.x).length;
      for (var r = 0; r < n; r++) {
        if (req.seeds) { util.seedRNG(req.seeds[r]); }
        var res = forward(d, {u: req.u ? req.u[r] : null, x: req.x ? req.x[r] : null,
                              draw: req.op === 'simulate'});
        runs.push(req.op === 'simulate' ? res.observed : req.op === 'constrain' ? res.values : res.latent);
      }
      return {values: runs};
    }
    default:
      throw new Error('unknown request ' + JSON.stringify(req.op));
  }
}

var lines = readline.createInterface({input: process.stdin, terminal: false});
lines.on('line', function(line) {
  var reply;
  try {
    reply = handle(JSON.parse(line));
    reply.ok = true;
  } catch (err) {
    reply = {error: (err && err.message) || String(err), kind: err instanceof StructureError ? 'structure' : 'program'};
  }
  process.stdout.write(JSON.stringify(reply) + '\n');
});
lines.on('close', function() { process.exit(0); });
