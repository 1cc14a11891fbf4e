// File: src/base/default_init.h
//
// DefaultInitAllocator: an allocator whose value-less construct() default-
// initialises, so that vector::resize(n) of a trivial type leaves the new
// elements uninitialised instead of zero-filling them. For large output
// arrays that the caller overwrites in full right after sizing them (the
// zero fill would be a second pass over the memory). Every other operation
// is the wrapped allocator's.
#ifndef TESSERA_SRC_BASE_DEFAULT_INIT_H_
#define TESSERA_SRC_BASE_DEFAULT_INIT_H_

#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace tessera {

template <typename T, typename Base = std::allocator<T>>
class DefaultInitAllocator : public Base {
  using Traits = std::allocator_traits<Base>;

 public:
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U, typename Traits::template rebind_alloc<U>>;
  };

  using Base::Base;
  DefaultInitAllocator() = default;
  template <typename U, typename B>
  DefaultInitAllocator(const DefaultInitAllocator<U, B>& other) noexcept  // NOLINT: rebinding.
      : Base(static_cast<const B&>(other)) {}

  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    Traits::construct(static_cast<Base&>(*this), p, std::forward<Args>(args)...);
  }
};

// A vector whose resize() does not zero-fill.
template <typename T>
using UninitVector = std::vector<T, DefaultInitAllocator<T>>;

}  // namespace tessera

#endif  // TESSERA_SRC_BASE_DEFAULT_INIT_H_
