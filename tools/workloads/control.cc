// ripple-control: quadrotor model-predictive control at 50 Hz, one sparse QP per step.
//
// The paper's Control task solves its MPC QP with OSQP. OSQP is not packaged for
// Debian 12, so this task implements OSQP's algorithm (ADMM with the reduced KKT system,
// Stellato et al. 2020) on Eigen: the same operator splitting, step sizes (rho, 1e3*rho
// on equality rows, sigma, alpha = 1.6), stopping test and warm start; the sparse
// matrix (P + sigma I + A' R A) is factored once (SimplicialLDLT), as OSQP does while
// rho stays fixed. No rho adaptation and no polishing.
//
// Model: a quadrotor linearised about hover, 12 states (position, velocity, roll/pitch/
// yaw, body rates) and 4 inputs (collective thrust offset, three torques), discretised
// at dt = 1/50 s, horizon `--horizon` steps. Condensed into the sparse form
//   min 1/2 z'Pz + q'z  s.t.  l <= Az <= u,  z = (x_0..x_N, u_0..u_{N-1}),
// with dynamics as equality rows, state (attitude) and input boxes as inequality rows.
// Each job: set x_0 to the measured state and the reference (a figure-8) in q, solve
// warm-started, apply u_0 to the simulated plant (with a small disturbance).
#include "tools/workloads/periodic.h"

#include <Eigen/Dense>
#include <Eigen/Sparse>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace ripple::workloads {
namespace {

constexpr int kNx = 12, kNu = 4;
constexpr double kDt = 0.02, kG = 9.81, kMass = 1.0, kIxx = 0.01, kIyy = 0.01, kIzz = 0.02;

using SpMat = Eigen::SparseMatrix<double>;
using Vec = Eigen::VectorXd;

struct ControlParams {
  int horizon = 20;
  int max_iter = 4000;
  double eps = 1e-3;
};

class Control final : public Job {
 public:
  Control(const ControlParams& p, uint64_t seed) : p_(p), rng_(seed) {
    if (p.horizon < 2 || p.horizon > 500) throw InputError("--horizon must be in [2, 500]");
    build();
  }

  void run_job(uint64_t seq) override {
    const double t = static_cast<double>(seq) * kDt;
    // x_0 = measured state: equality rows 0..nx-1 say -x_0 = -x_meas.
    l_.head(kNx) = -x_;
    u_.head(kNx) = -x_;
    // Reference: figure-8 in x-y at 1 m height; q = -Q x_ref per stage.
    for (int k = 0; k <= p_.horizon; ++k) {
      const double tk = t + k * kDt;
      Eigen::Matrix<double, kNx, 1> ref = Eigen::Matrix<double, kNx, 1>::Zero();
      ref(0) = std::sin(0.5 * tk);
      ref(1) = 0.5 * std::sin(1.0 * tk);
      ref(2) = 1.0;
      const auto& qd = k == p_.horizon ? qn_diag_ : q_diag_;
      q_.segment(k * kNx, kNx) = -qd.cwiseProduct(ref);
      if (k == 0) ref_ = ref;
    }
    iters_ += solve();
    // Apply u_0 to the plant (the linear model plus a small disturbance).
    const Vec u0 = z_.segment((p_.horizon + 1) * kNx, kNu);
    std::normal_distribution<double> w(0.0, 1e-3);
    Eigen::Matrix<double, kNx, 1> x_next = ad_ * x_ + bd_ * u0;
    for (int i = 0; i < kNx; ++i) x_next(i) += w(rng_);
    x_ = x_next;
    err_ += (x_.head(3) - ref_.head(3)).norm();
    ++jobs_;
  }

  double bytes_per_job() const override {
    // Per ADMM iteration: the LDLT solve reads L twice, A and A' are read once each, and
    // ~10 vectors of n or m doubles are streamed. All of it fits in cache: an upper bound.
    const double per_iter = 2.0 * 12.0 * static_cast<double>(l_nnz_) +
                            2.0 * 12.0 * static_cast<double>(a_.nonZeros()) +
                            10.0 * 8.0 * static_cast<double>(n_ + m_);
    return per_iter * (jobs_ ? static_cast<double>(iters_) / static_cast<double>(jobs_) : 50.0);
  }

  std::string check() const override {
    char buf[160];
    std::snprintf(buf, sizeof buf, "QP %d vars x %d rows; mean ADMM iterations %.1f; mean tracking error %.3f m; %llu unconverged",
                  n_, m_, jobs_ ? static_cast<double>(iters_) / jobs_ : 0.0, jobs_ ? err_ / jobs_ : 0.0,
                  static_cast<unsigned long long>(unconverged_));
    return buf;
  }

 private:
  void build() {
    const int N = p_.horizon;
    // Continuous-time hover linearisation, Euler-discretised.
    ad_.setIdentity();
    bd_.setZero();
    for (int i = 0; i < 3; ++i) ad_(i, 3 + i) = kDt;      // p' = v
    ad_(3, 7) = kG * kDt;                                 // vx' = g * pitch
    ad_(4, 6) = -kG * kDt;                                // vy' = -g * roll
    for (int i = 0; i < 3; ++i) ad_(6 + i, 9 + i) = kDt;  // attitude' = rates
    bd_(5, 0) = kDt / kMass;
    bd_(9, 1) = kDt / kIxx;
    bd_(10, 2) = kDt / kIyy;
    bd_(11, 3) = kDt / kIzz;
    q_diag_ << 20, 20, 40, 1, 1, 1, 0.5, 0.5, 0.5, 0.1, 0.1, 0.1;
    qn_diag_ = 10.0 * q_diag_;
    const Eigen::Vector4d r_diag(0.1, 1.0, 1.0, 1.0);

    n_ = (N + 1) * kNx + N * kNu;
    const int m_eq = (N + 1) * kNx;
    m_ = m_eq + (N + 1) * kNx + N * kNu;
    std::vector<Eigen::Triplet<double>> tp, ta;
    for (int k = 0; k <= N; ++k)
      for (int i = 0; i < kNx; ++i) tp.emplace_back(k * kNx + i, k * kNx + i, k == N ? qn_diag_(i) : q_diag_(i));
    for (int k = 0; k < N; ++k)
      for (int i = 0; i < kNu; ++i) {
        int j = (N + 1) * kNx + k * kNu + i;
        tp.emplace_back(j, j, r_diag(i));
      }
    // Dynamics: -x_0 = -x_meas; x_{k+1} - A x_k - B u_k = 0 written as A x_k + B u_k - x_{k+1} = 0.
    for (int k = 0; k <= N; ++k)
      for (int i = 0; i < kNx; ++i) ta.emplace_back(k * kNx + i, k * kNx + i, -1.0);
    for (int k = 0; k < N; ++k) {
      for (int i = 0; i < kNx; ++i)
        for (int j = 0; j < kNx; ++j)
          if (ad_(i, j) != 0.0) ta.emplace_back((k + 1) * kNx + i, k * kNx + j, ad_(i, j));
      for (int i = 0; i < kNx; ++i)
        for (int j = 0; j < kNu; ++j)
          if (bd_(i, j) != 0.0) ta.emplace_back((k + 1) * kNx + i, (N + 1) * kNx + k * kNu + j, bd_(i, j));
    }
    for (int i = 0; i < n_; ++i) ta.emplace_back(m_eq + i, i, 1.0);  // boxes on every variable
    p_mat_.resize(n_, n_);
    p_mat_.setFromTriplets(tp.begin(), tp.end());
    a_.resize(m_, n_);
    a_.setFromTriplets(ta.begin(), ta.end());
    at_ = a_.transpose();

    l_ = Vec::Zero(m_);
    u_ = Vec::Zero(m_);
    const double inf = 1e20;
    Eigen::Matrix<double, kNx, 1> xmin, xmax;
    xmin << -inf, -inf, -inf, -inf, -inf, -inf, -0.5, -0.5, -inf, -inf, -inf, -inf;
    xmax = -xmin;
    const Eigen::Vector4d umin(-kMass * kG * 0.8, -0.1, -0.1, -0.05), umax(kMass * kG * 1.5, 0.1, 0.1, 0.05);
    for (int k = 0; k <= N; ++k) {
      l_.segment(m_eq + k * kNx, kNx) = xmin;
      u_.segment(m_eq + k * kNx, kNx) = xmax;
    }
    for (int k = 0; k < N; ++k) {
      l_.segment(m_eq + (N + 1) * kNx + k * kNu, kNu) = umin;
      u_.segment(m_eq + (N + 1) * kNx + k * kNu, kNu) = umax;
    }
    // OSQP step sizes: rho on inequality rows, 1e3 * rho on equality rows.
    rho_ = Vec::Constant(m_, 0.1);
    rho_.head(m_eq).setConstant(0.1 * 1e3);
    SpMat kkt = p_mat_;
    for (int i = 0; i < n_; ++i) kkt.coeffRef(i, i) += sigma_;
    kkt += at_ * rho_.asDiagonal() * a_;
    ldlt_.compute(kkt);
    if (ldlt_.info() != Eigen::Success) throw std::runtime_error("KKT factorisation failed");
    // nnz of L for the traffic estimate.
    l_nnz_ = ldlt_.matrixL().nestedExpression().nonZeros();
    z_ = Vec::Zero(n_);
    zc_ = Vec::Zero(m_);
    y_ = Vec::Zero(m_);
    q_ = Vec::Zero(n_);
    x_.setZero();
  }

  // OSQP's ADMM iteration (Stellato et al. 2020, Alg. 1), warm-started from the last
  // solution. Returns the iterations used.
  int solve() {
    const double alpha = 1.6;
    Vec xt(n_), ztilde(m_), zprev(m_);
    const Vec rho_inv = rho_.cwiseInverse();
    for (int it = 1; it <= p_.max_iter; ++it) {
      Vec rhs = sigma_ * z_ - q_ + at_ * (rho_.cwiseProduct(zc_) - y_);
      xt = ldlt_.solve(rhs);
      ztilde = a_ * xt;
      zprev = zc_;
      z_ = alpha * xt + (1.0 - alpha) * z_;
      Vec zr = alpha * ztilde + (1.0 - alpha) * zprev;
      zc_ = (zr + rho_inv.cwiseProduct(y_)).cwiseMax(l_).cwiseMin(u_);
      y_ += rho_.cwiseProduct(zr - zc_);
      if (it % 5 == 0) {  // residual check every 5 iterations, as OSQP's check_termination
        const Vec az = a_ * z_;
        const double prim = (az - zc_).lpNorm<Eigen::Infinity>();
        const Vec px = p_mat_ * z_;
        const Vec aty = at_ * y_;
        const double dual = (px + q_ + aty).lpNorm<Eigen::Infinity>();
        const double eprim = p_.eps + p_.eps * std::max(az.lpNorm<Eigen::Infinity>(), zc_.lpNorm<Eigen::Infinity>());
        const double edual = p_.eps + p_.eps * std::max({px.lpNorm<Eigen::Infinity>(), aty.lpNorm<Eigen::Infinity>(),
                                                         q_.lpNorm<Eigen::Infinity>()});
        if (prim <= eprim && dual <= edual) return it;
      }
    }
    ++unconverged_;
    return p_.max_iter;
  }

  ControlParams p_;
  std::mt19937_64 rng_;
  Eigen::Matrix<double, kNx, kNx> ad_;
  Eigen::Matrix<double, kNx, kNu> bd_;
  Eigen::Matrix<double, kNx, 1> q_diag_, qn_diag_, x_, ref_;
  int n_ = 0, m_ = 0;
  SpMat p_mat_, a_, at_;
  Vec l_, u_, q_, rho_, z_, zc_, y_;
  double sigma_ = 1e-6;
  Eigen::SimplicialLDLT<SpMat> ldlt_;
  Eigen::Index l_nnz_ = 0;
  uint64_t iters_ = 0, jobs_ = 0, unconverged_ = 0;
  double err_ = 0;
};

}  // namespace
}  // namespace ripple::workloads

int main(int argc, char** argv) {
  using namespace ripple::workloads;
  PeriodicProgram prog("control", "quadrotor MPC, an OSQP-style ADMM QP solve per step (Eigen)", 20.0);
  ControlParams p;
  auto& app = prog.app();
  app.add_option("--horizon", p.horizon, "MPC horizon in steps (data size)")->capture_default_str();
  app.add_option("--max-iter", p.max_iter, "ADMM iteration limit")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--eps", p.eps, "absolute and relative tolerance")->check(CLI::PositiveNumber)->capture_default_str();
  return prog.run(argc, argv, [&] { return std::make_unique<Control>(p, prog.options().seed); });
}
