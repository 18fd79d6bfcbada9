#!/usr/bin/perl
# Every relative link in README.md, CONTRIBUTING.md, ARCHITECTURE.md and docs/*.md resolves:
# the file exists, and a #anchor names a heading of the target, by GitHub's rule (lower case,
# every character but letters, digits, '_', '-' and spaces dropped, spaces to '-', a repeated
# heading gets -1, -2 ...). Links inside code (fenced blocks, `spans`) are not links.
# Perl, not Python: perl-base is on every Debian system.
#   usage: links_test.pl SOURCE_DIR
use strict;
use warnings;

my $src = shift or die "usage: $0 SOURCE_DIR\n";
my @pages = grep { -e } map { "$src/$_" } qw(README.md CONTRIBUTING.md ARCHITECTURE.md);
push @pages, sort glob("$src/docs/*.md");

# The lines of a page outside fenced code blocks: [line number, text].
sub prose {
  my ($path) = @_;
  open(my $fh, '<:encoding(UTF-8)', $path) or die "$path: $!\n";
  my ($fenced, $n, @out) = (0, 0);
  while (my $line = <$fh>) {
    $n++;
    if ($line =~ /^\s*(```|~~~)/) { $fenced = !$fenced; next; }
    push @out, [$n, $line] unless $fenced;
  }
  return @out;
}

sub slug {
  my ($h) = @_;
  $h =~ s/<[^>]+>//g;
  $h =~ s/\[([^\]]*)\]\([^)]*\)/$1/g;
  $h = lc $h;
  $h =~ s/[^\w\- ]//g;
  $h =~ s/ /-/g;
  return $h;
}

my %anchor_cache;
sub anchors {
  my ($path) = @_;
  return $anchor_cache{$path} if $anchor_cache{$path};
  my (%seen, %out);
  for my $l (prose($path)) {
    next unless $l->[1] =~ /^#{1,6}\s+(.*?)\s*#*\s*$/;
    my $s = slug($1);
    my $k = $seen{$s}++ // 0;
    $out{$k ? "$s-$k" : $s} = 1;
  }
  return $anchor_cache{$path} = \%out;
}

sub dirname_of { my ($p) = @_; $p =~ s{/[^/]*$}{}; return $p; }

my ($failed, $checked) = (0, 0);
for my $page (@pages) {
  (my $name = $page) =~ s{^\Q$src\E/}{};
  for my $l (prose($page)) {
    my ($n, $line) = @$l;
    $line =~ s/`[^`]*`/``/g;
    my @targets;
    push @targets, $1 while $line =~ /\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g;
    push @targets, $1 if $line =~ /^\s*\[[^\]]+\]:\s*(\S+)/;
    for my $t (@targets) {
      next if $t =~ /^[a-z][a-z0-9+.-]*:/i;  # https:, mailto: ...: not ours
      $checked++;
      my ($path, $anchor) = split /#/, $t, 2;
      my $target = $path eq '' ? $page : dirname_of($page) . "/$path";
      if (!-e $target) { print "FAIL: $name:$n: $t: no such file\n"; $failed = 1; next; }
      if (defined $anchor && $target =~ /\.md$/ && !anchors($target)->{$anchor}) {
        print "FAIL: $name:$n: $t: no heading '#$anchor' in $path\n";
        $failed = 1;
      }
    }
  }
}
print "$checked relative links in " . scalar(@pages) . " pages\n";
if (!$checked) { print "FAIL: no links found: the pattern is broken\n"; $failed = 1; }
exit $failed;
