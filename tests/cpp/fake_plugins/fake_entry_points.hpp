// The create/destroy pair CUPLUG_PLUGIN would make, for fakes whose manifest is written by hand.
#pragma once

#include <cuplug/plugin.hpp>

#define FAKE_CREATE(Class)                                                                         \
  namespace fake_entry {                                                                           \
  ::cuplug::plugin_object *create(const ::cuplug::options &o) { return new Class(o); }             \
  }                                                                                                \
  BOOST_DLL_ALIAS(fake_entry::create, cuplug_create)

#define FAKE_DESTROY()                                                                             \
  namespace fake_entry {                                                                           \
  void destroy(::cuplug::plugin_object *p) { delete p; }                                           \
  }                                                                                                \
  BOOST_DLL_ALIAS(fake_entry::destroy, cuplug_destroy)
