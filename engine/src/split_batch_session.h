// SessionOptions::images_per_run: a CPU session that runs its batch a few images at a time
// through one arena (split_batch_session.cpp). Session::create and Session::plan ask these first
// for every CPU session: they say whether the batch runs in several runs (asked for, or chosen by
// kImagesPerRunAuto), and make that session or its plan.
#pragma once

#include <memory>
#include <optional>

#include "engine/src/session_impl.h"

namespace winfer {

// The option's own checks: >= 0 or kImagesPerRunAuto, and the CPU only when set.
Status check_images_per_run(const SessionOptions& options);
// The images per run of a CPU session for input shape `whole`: images_per_run as given, or
// kImagesPerRunAuto's choice; 0 or the batch or more = the whole batch in one run. (Auto may
// still decline at create, when the runs' kernels would pack weights of their own.)
int64_t images_per_run_for(const std::shared_ptr<const Model>& model, const SessionOptions& options,
                           const Shape& whole);
// The session (and its memory plan) for input shape `whole` when it runs its batch in several
// runs: the CPU sessions of images_per_run images, and one for the rest of the batch when it is
// not a multiple, sharing one arena. nullptr (std::nullopt) when the whole batch runs at once.
Result<std::unique_ptr<SessionImpl>> create_split_batch_session(std::shared_ptr<const Model> model,
                                                                const SessionOptions& options, const Shape& whole);
Result<std::optional<MemoryReport>> plan_split_batch_session(std::shared_ptr<const Model> model,
                                                             const SessionOptions& options, const Shape& whole);

}  // namespace winfer
