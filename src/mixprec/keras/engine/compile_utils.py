"""``model.compiled_loss`` and ``model.compiled_metrics``: the callables a custom
``train_step`` uses (tf-keras 2.x' LossesContainer and MetricsContainer): the loss of
compile's losses (plus the regularization losses given) that also feeds the 'loss'
tracker, and the update of compile's metrics. Thin views on the model's own compiled
state (engine/training.py computes everything); no arithmetic here."""

__all__ = ["LossesContainer", "MetricsContainer"]


class LossesContainer:
    """``compiled_loss(y_true, y_pred, sample_weight=None, regularization_losses=None)``."""

    def __init__(self, model, losses):
        self._model = model
        self._user_losses = losses  # compile's ``loss`` argument, as given

    def __call__(self, y_true, y_pred, sample_weight=None, regularization_losses=None):
        model = self._model
        total = model._compiled_loss_value(y_true, y_pred, sample_weight,
                                           list(regularization_losses or []))
        model._track_losses(total, y_true, y_pred)
        return total

    @property
    def metrics(self):
        model = self._model
        if not model.__dict__.get("_compiled_built"):
            return []
        return [model._loss_tracker] + list(model._output_loss_trackers or [])

    def reset_state(self):
        for m in self.metrics:
            m.reset_state()


class MetricsContainer:
    """``compiled_metrics.update_state(y_true, y_pred, sample_weight=None)``."""

    def __init__(self, model, metrics, weighted_metrics):
        self._model = model
        self._user_metrics = metrics
        self._user_weighted_metrics = weighted_metrics

    def update_state(self, y_true, y_pred, sample_weight=None):
        self._model._update_compiled_metrics(y_true, y_pred, sample_weight)

    @property
    def metrics(self):
        return list(self._model.__dict__.get("_metric_objs") or [])

    def reset_state(self):
        for m in self.metrics:
            m.reset_state()
