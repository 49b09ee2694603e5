// fmt's implementation, compiled once for the whole build (MoejitDependencies.cmake): its
// non-template functions from fmt's own format-inl.h, and the two templates format.h declares
// `extern` outside header-only mode, instantiated for char (the only character type moejit formats).
#include <fmt/format-inl.h>
#include <fmt/format.h>

FMT_BEGIN_NAMESPACE
namespace detail {
template auto thousands_sep_impl<char>(locale_ref) -> thousands_sep_result<char>;
template auto decimal_point_impl<char>(locale_ref) -> char;
}  // namespace detail
FMT_END_NAMESPACE
