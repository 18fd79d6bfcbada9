#pragma once
// A Page as one self-contained HTML document: inline CSS and SVG, no script, no font or image
// fetched from anywhere, so it opens offline, travels as a mail attachment and prints.
#include <string>

#include "report/page.h"

namespace gpureap::report {

std::string render_html(const Page& page);

}  // namespace gpureap::report
