// A vector that keeps its first N elements inside itself. A replay builds millions of tasks and
// activities, each with one or two resource usages and successors: a std::vector per list costs a
// heap allocation (and, growing, page faults) per task, which dominated building a big step.
// Only for trivially copyable element types (ids, usages): elements are moved with memcpy.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <new>
#include <span>
#include <type_traits>

namespace stacksim::sim {

template <class T, uint32_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "SmallVector moves its elements with memcpy");
  static_assert(N > 0);

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  SmallVector() = default;
  SmallVector(std::initializer_list<T> items) { assign(items.begin(), items.end()); }
  SmallVector(const SmallVector& o) { assign(o.begin(), o.end()); }
  SmallVector(SmallVector&& o) noexcept { take(o); }
  SmallVector& operator=(const SmallVector& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  SmallVector& operator=(SmallVector&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  SmallVector& operator=(std::initializer_list<T> items) {
    assign(items.begin(), items.end());
    return *this;
  }
  ~SmallVector() { release(); }

  template <class It>
  void assign(It first, It last) {
    clear();
    reserve(static_cast<uint32_t>(std::distance(first, last)));
    for (; first != last; ++first) push_back(*first);
  }

  T* data() { return heap_ ? heap_ : inline_data(); }
  const T* data() const { return heap_ ? heap_ : inline_data(); }
  uint32_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  uint32_t capacity() const { return heap_ ? capacity_ : N; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }
  operator std::span<const T>() const { return {data(), size_}; }

  void clear() { size_ = 0; }
  void push_back(const T& v) {
    if (size_ == capacity()) grow(std::max<uint32_t>(2 * capacity(), N + 1));
    data()[size_++] = v;
  }
  void pop_back() { --size_; }
  void reserve(uint32_t n) {
    if (n > capacity()) grow(n);
  }
  // New elements (when growing) are value-initialised.
  void resize(uint32_t n) {
    reserve(n);
    for (uint32_t i = size_; i < n; ++i) data()[i] = T{};
    size_ = n;
  }
  // Gives back heap storage and empties.
  void release() {
    std::free(heap_);
    heap_ = nullptr;
    size_ = 0;
  }

  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  T* inline_data() { return std::launder(reinterpret_cast<T*>(inline_)); }
  const T* inline_data() const { return std::launder(reinterpret_cast<const T*>(inline_)); }

  void grow(uint32_t n) {
    T* p = static_cast<T*>(std::malloc(sizeof(T) * n));
    if (!p) throw std::bad_alloc();
    if (size_) std::memcpy(static_cast<void*>(p), data(), sizeof(T) * size_);
    std::free(heap_);
    heap_ = p;
    capacity_ = n;
  }
  void take(SmallVector& o) {
    size_ = o.size_;
    if (o.heap_) {
      heap_ = o.heap_;
      capacity_ = o.capacity_;
      o.heap_ = nullptr;
    } else if (size_) {
      std::memcpy(inline_, o.inline_, sizeof(T) * size_);
    }
    o.size_ = 0;
  }

  T* heap_ = nullptr;  // null while the elements fit inline
  uint32_t size_ = 0;
  uint32_t capacity_ = 0;  // of heap_
  alignas(T) unsigned char inline_[sizeof(T) * N];
};

}  // namespace stacksim::sim
