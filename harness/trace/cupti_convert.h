#pragma once
// Private to harness_cupti: CUPTI activity records → TraceEvents.
#include <cupti.h>

#include "harness/trace/trace_event.h"

namespace harness::trace::cupti_detail {

enum class Converted { event, ignored, incomplete };

// Fills `out` from one record. `ignored`: a kind we do not convert;
// `incomplete`: a record a forced flush delivered before its timestamps were set.
Converted convert_record(const CUpti_Activity* record, TraceEvent& out);

}  // namespace harness::trace::cupti_detail
