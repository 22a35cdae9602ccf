// InputError (model/error.h), under the name every file of weights/, engine/
// and apps/ already includes.
#pragma once

#include "model/error.h"
