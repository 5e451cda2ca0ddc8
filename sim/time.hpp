// Simulated time: an integer count of picoseconds (about 106 days of range in int64).
// Integer time gives a total order without epsilon comparisons (STYLE.md 3.3 habit 4).
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

namespace stacksim::sim {

class Time {
 public:
  constexpr Time() = default;
  static constexpr Time from_ps(int64_t ps) { return Time(ps); }
  // Rounds up so that a positive duration never becomes zero (no zero-length loops).
  static Time from_seconds_ceil(double seconds) {
    if (!(seconds > 0)) return Time(0);
    const double ps = std::ceil(seconds * 1e12);
    return ps >= static_cast<double>(kMaxPs) ? max() : Time(static_cast<int64_t>(ps));
  }
  static Time from_seconds(double seconds) {  // nearest picosecond
    const double ps = std::llround(seconds * 1e12);
    return Time(static_cast<int64_t>(ps));
  }
  static constexpr Time zero() { return Time(0); }
  static constexpr Time max() { return Time(kMaxPs); }

  constexpr int64_t ps() const { return ps_; }
  constexpr double seconds() const { return static_cast<double>(ps_) * 1e-12; }

  constexpr Time operator+(Time o) const { return Time(ps_ + o.ps_); }
  constexpr Time operator-(Time o) const { return Time(ps_ - o.ps_); }
  constexpr Time& operator+=(Time o) {
    ps_ += o.ps_;
    return *this;
  }
  constexpr Time& operator-=(Time o) {
    ps_ -= o.ps_;
    return *this;
  }
  constexpr Time operator*(int64_t k) const { return Time(ps_ * k); }
  constexpr auto operator<=>(const Time&) const = default;

 private:
  static constexpr int64_t kMaxPs = std::numeric_limits<int64_t>::max() / 4;
  constexpr explicit Time(int64_t ps) : ps_(ps) {}
  int64_t ps_ = 0;
};

}  // namespace stacksim::sim
