// For the planners' pybind11 testing modules (_attention_testing, _conv_testing): runs a planner and turns aotirt's
// errors into ValueError("NotSupported: ..." / "ShimError: ..."), the words the Python tests match.
#ifndef AOTIRT_TESTS_UTIL_PYBIND_PLAN_H_
#define AOTIRT_TESTS_UTIL_PYBIND_PLAN_H_

#include <pybind11/pybind11.h>

#include <string>

#include "shims/common/error.h"

namespace aotirt_testing {

template <class Plan>
auto PlanOrValueError(Plan&& plan) -> decltype(plan()) {
  try {
    return plan();
  } catch (const aotirt::NotSupportedError& e) {
    throw pybind11::value_error(std::string("NotSupported: ") + e.what());
  } catch (const aotirt::ShimError& e) {
    throw pybind11::value_error(std::string("ShimError: ") + e.what());
  }
}

}  // namespace aotirt_testing
#endif  // AOTIRT_TESTS_UTIL_PYBIND_PLAN_H_
