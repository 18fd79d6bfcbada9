// TopModel's dialogs: help, the kill plan, the running kill and its outcome, drawn as a box
// over the screen.
#include <fmt/format.h>

#include <algorithm>

#include "text/display_width.h"
#include "text/wrap.h"
#include "tui/model.h"

namespace gpureap::tui {
namespace {

using text::fit;
using text::pad_right;
using text::text_width;
using text::wrap;

// The key table's groups, keys and descriptions each wrapped to fit `width` columns.
std::vector<Line> help_lines(bool readonly, size_t width) {
  size_t key_w = width >= 100 ? 28 : 20;
  size_t text_w = width > key_w + 10 ? width - key_w : 10;
  std::vector<Line> out;
  for (const auto& group : table_bindings()) {
    auto keys = wrap(keys_label(group), key_w - 2);
    auto what = wrap(readonly && group.what_readonly ? *group.what_readonly : group.what, text_w);
    for (size_t i = 0; i < std::max(keys.size(), what.size()); ++i)
      out.push_back(Line()
                        .add(pad_right(i < keys.size() ? keys[i] : "", key_w), Role::Key)
                        .add(i < what.size() ? what[i] : ""));
  }
  out.push_back({});
  // A legend wrapped word by word, each word in its part's role; a separator ("·") stays at the
  // end of the line before, so no line starts with one or ends with a lone title.
  auto legend = [&](const std::vector<std::pair<std::string, Role>>& parts) {
    struct Word {
      std::vector<Span> spans;  // a word may change role inside ("ghost" then "·")
      bool space_before = false;
      size_t width() const {
        size_t w = 0;
        for (const auto& s : spans) w += text_width(s.text);
        return w;
      }
    };
    std::vector<Word> words;
    bool space = false;
    for (const auto& [t, role] : parts)
      for (size_t i = 0; i <= t.size();) {
        size_t end = std::min(t.find(' ', i), t.size());
        std::string piece = t.substr(i, end - i);
        if (!piece.empty()) {
          bool glue = !words.empty() && (!space || piece == "·" || piece == "-" || piece == ";");
          if (glue) {
            if (space) words.back().spans.push_back({" ", role});
            words.back().spans.push_back({piece, role});
          } else {
            words.push_back({{{piece, role}}, space});
          }
          space = false;
        }
        if (end < t.size()) space = true;
        i = end + 1;
      }
    Line l;
    for (const auto& word : words) {
      size_t gap = l.spans.empty() ? 0 : 1;
      if (!l.spans.empty() && l.width() + gap + word.width() > width) {
        out.push_back(std::move(l));
        l = Line();
        gap = 0;
      }
      if (gap) l.add(" ", Role::Dim);
      for (const auto& sp : word.spans) l.add(sp.text, sp.role);
    }
    out.push_back(std::move(l));
  };
  legend({{"Rows: ", Role::Dim},
          {"ghost", Role::Ghost},
          {" (memory held for a gone process) · ", Role::Dim},
          {"stuck", Role::Stuck},
          {" (stopped or uninterruptible) · ", Role::Dim},
          {"other anomaly", Role::Warn},
          {" · ", Role::Dim},
          {"dim: context, or not yours to signal.", Role::Dim}});
  legend({{"Memory bar: ", Role::Dim},
          {"attributed", Role::BarAttributed},
          {" · ", Role::Dim},
          {"ghost", Role::BarGhost},
          {" · ", Role::Dim},
          {"unattributed", Role::BarUnattributed},
          {" · ", Role::Dim},
          {"free.", Role::BarFree}});
  legend({{"Sparklines: memory used, then utilisation, over the last minutes.", Role::Dim}});
  return out;
}

}  // namespace

size_t TopModel::help_width() const {
  return std::min<size_t>(110, layout_.width > 8 ? layout_.width - 8 : 8);
}

size_t TopModel::help_rows() const {
  return help_lines(settings_.readonly, help_width()).size();
}

void TopModel::compose_dialog(Frame& f) const {
  std::vector<Line> content;
  std::string title, hint;
  Role title_role = dialog_role_;
  switch (mode_) {
    case Mode::Help:
      content = help_lines(settings_.readonly, help_width());
      title = "gpureap top: keys";
      hint = "Up/Down PgUp/PgDn scroll · any other key closes";
      title_role = Role::Normal;
      break;
    case Mode::Plan:
      for (const auto& s : dialog_lines_) content.push_back(Line().add(s));
      title = dialog_title_;
      hint = dialog_signals_ > 0
                 ? "y SIGTERM then SIGKILL · t SIGTERM · i SIGINT · 9 SIGKILL · Esc cancels"
                 : "Esc closes";
      break;
    case Mode::Running:
      for (const auto& s : dialog_lines_) content.push_back(Line().add(s));
      title = dialog_title_;
      hint = "Esc hides it; the outcome pops up";
      break;
    case Mode::Outcome:
      for (const auto& s : dialog_lines_) content.push_back(Line().add(s));
      title = dialog_title_;
      hint = "Enter or Esc closes";
      break;
    case Mode::Table:
    case Mode::FilterInput:
      return;
  }
  draw_dialog(f, title, title_role, hint, content);
}

// A box centred on the screen: the title in its top border, the hint (and where the scrolled
// content is) in the bottom one.
void TopModel::draw_dialog(Frame& f, const std::string& title, Role title_role,
                           const std::string& hint, const std::vector<Line>& content) const {
  const Glyphs& gl = glyphs(settings_.unicode);
  size_t cw = std::max(text_width(title) + 4, text_width(hint) + 4);
  for (const auto& l : content) cw = std::max(cw, l.width());
  Box b = center_box(f.width, f.height, cw, content.size());
  if (b.width < 8 || b.height < 3) return;
  size_t inner = b.width - 4;
  size_t rows = b.height - 2;
  size_t first = std::min(dialog_scroll_, content.size() > rows ? content.size() - rows : 0);

  auto rule = [&](size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s += gl.h;
    return s;
  };
  std::vector<Line> box;
  std::string t = " " + fit(title, b.width - 6, gl.ellipsis) + " ";
  box.push_back(Line()
                    .add(std::string(gl.tl) + gl.h, Role::Border)
                    .add(t, title_role == Role::Normal ? Role::Header : title_role)
                    .add(rule(b.width - 3 - text_width(t)) + gl.tr, Role::Border));
  for (size_t i = 0; i < rows; ++i) {
    Line l;
    l.add(std::string(gl.v) + " ", Role::Border);
    Line body = pad_line(first + i < content.size() ? content[first + i] : Line(), inner);
    l.spans.insert(l.spans.end(), body.spans.begin(), body.spans.end());
    l.add(std::string(" ") + gl.v, Role::Border);
    box.push_back(std::move(l));
  }
  std::string more = content.size() > rows ? fmt::format(" {}/{} ", first + 1, content.size()) : "";
  std::string h =
      " " +
      fit(hint, b.width > 8 + text_width(more) ? b.width - 6 - text_width(more) : 1, gl.ellipsis) +
      " ";
  size_t fill = b.width > 3 + text_width(h) + text_width(more)
                    ? b.width - 3 - text_width(h) - text_width(more)
                    : 0;
  box.push_back(Line()
                    .add(std::string(gl.bl) + gl.h, Role::Border)
                    .add(h, Role::Key)
                    .add(rule(fill), Role::Border)
                    .add(more, Role::Dim)
                    .add(gl.br, Role::Border));
  overlay(f, b.x, b.y, box);
}

}  // namespace gpureap::tui
