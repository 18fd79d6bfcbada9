#include "cli/page_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>

#include "text/escape.h"

namespace gpureap::cli {

core::Result<size_t> write_page(const std::string& out, const std::string& html) {
  if (out == "-") {
    std::cout << html << std::flush;
    return html.size();
  }
  std::ofstream file(out, std::ios::binary | std::ios::trunc);
  if (file) file << html;
  if (file) file.close();
  if (!file)
    return core::Error{
        "cannot write the report to " + text::terminal_safe(out) + ": " + std::strerror(errno),
        "choose a writable path with --out"};
  return html.size();
}

}  // namespace gpureap::cli
